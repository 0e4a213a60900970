package contextmgr

import (
	"sync"

	"github.com/tiktoken-go/tokenizer"
	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/dittolab/ditto/internal/llm"
)

// Counter counts the tokens of a text. Implementations must be safe for concurrent use.
type Counter interface {
	Count(text string) int
}

// Per-message framing of the chat format, as OpenAI documents it for its chat models: each
// message costs its text plus a few tokens of role and separators; each tool call its name,
// its arguments and a few more.
const (
	messageOverhead  = 4
	toolCallOverhead = 3
)

var (
	bpeOnce  sync.Once
	bpeCodec tokenizer.Codec
)

// BPE returns the Counter of OpenAI's cl100k_base encoding. The vocabulary is compiled into
// the binary; building the codec the first time takes tens of milliseconds, once per process.
func BPE() Counter {
	bpeOnce.Do(func() { bpeCodec = codec.NewCl100kBase() })
	return bpeCounter{bpeCodec}
}

type bpeCounter struct{ c tokenizer.Codec }

// Count returns the number of cl100k_base tokens of text. Invalid UTF-8 is counted as the
// codec reads it (replacement characters), never refused: a count must always be possible.
func (b bpeCounter) Count(text string) int {
	n, err := b.c.Count(text)
	if err != nil {
		// The codec fails only on input it cannot split; a byte-per-token bound is then an
		// over-estimate, which keeps the budget safe.
		return len(text)
	}
	return n
}

// MessageTokens returns the tokens one message costs in a request: its content, its tool
// calls and the chat framing.
func MessageTokens(c Counter, m llm.Message) int {
	n := messageOverhead + c.Count(m.Content)
	for _, tc := range m.ToolCalls {
		n += toolCallOverhead + c.Count(tc.Name) + c.Count(tc.Arguments)
	}
	return n
}

// ToolTokens returns the tokens that offering tools costs in a request: each name, description
// and parameter schema, with its framing.
func ToolTokens(c Counter, tools []llm.ToolDef) int {
	n := 0
	for _, t := range tools {
		n += toolCallOverhead + c.Count(t.Name) + c.Count(t.Description) + c.Count(string(t.Parameters))
	}
	return n
}
