package warehouse

import (
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/dittolab/ditto/events"
)

// DecodeForBench decodes raw messages as the fetcher does and returns how many were good.
func DecodeForBench(subjects []string, raws [][]byte) int {
	items := make([]*item, len(raws))
	for i := range raws {
		items[i] = &item{subject: subjects[i], raw: raws[i]}
		decodeItem(items[i])
	}
	br := buildFor(items)
	defer br.release()
	_ = memory.DefaultAllocator
	return len(br.items)
}

// FoldForBench folds histories as the committer does from memory.
func FoldForBench(h []events.Envelope) int {
	hist := make([]histEvent, len(h))
	for i := range h {
		hist[i] = histEvent{env: h[i], streamSeq: uint64(i)}
	}
	sortHistory(hist)
	row, _ := foldHistory(attemptKey{h[0].Study, h[0].Run, h[0].Attempt}, hist)
	return len(row)
}
