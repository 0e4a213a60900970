// Command dpa-review-server is the MCP server of the example task examples/dpa-review/task.yaml:
// the review of a data processing agreement (DPA) against the clauses Article 28(3) GDPR
// requires of one. It serves four tools over stdio (the default: a harness-worker starts it) or
// over Streamable HTTP (--http ADDR):
//
//   - fetch_agreement: the parties and the clause headings of an agreement;
//   - assess_requirements: which Article 28(3) requirements a clause meets, which are missing;
//   - request_amendment: open an amendment request for the missing clauses;
//   - file_review: file the outcome of the review.
//
// The answers are deterministic: a fixed set of agreements (agreements.json, embedded) and
// fixed keyword rules. request_amendment and file_review honour the idempotency key a caller
// puts in the call's _meta ("dev.ditto/idempotency_key"): a call repeated with the same key
// gets the first call's answer and opens nothing new.
//
// It is written with the official Go SDK (github.com/modelcontextprotocol/go-sdk) as a server
// of your own would be; copy it and replace the tools.
package main

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

//go:embed agreements.json
var agreementsJSON []byte

type clause struct {
	ID      string `json:"clause_id"`
	Heading string `json:"heading"`
	Text    string `json:"text"`
}

type agreement struct {
	Controller string   `json:"controller"`
	Processor  string   `json:"processor"`
	Clauses    []clause `json:"clauses"`
}

// requirements are the clauses Article 28(3) GDPR requires, each met by a clause whose text
// holds every keyword of one of its alternatives.
var requirements = []struct {
	name string
	any  [][]string
}{
	{"instructions", [][]string{{"documented instructions"}}},
	{"confidentiality", [][]string{{"confidentiality"}}},
	{"security", [][]string{{"article 32"}, {"technical and organisational measures"}}},
	{"sub_processors", [][]string{{"prior", "authorisation"}}},
	{"data_subject_rights", [][]string{{"data subject"}}},
	{"assistance", [][]string{{"impact assessment"}}},
	{"deletion_return", [][]string{{"delete", "return"}}},
	{"audits", [][]string{{"audit"}}},
}

func requirementNames() []string {
	out := make([]string, len(requirements))
	for i, r := range requirements {
		out[i] = r.name
	}
	return out
}

type server struct {
	agreements map[string]agreement

	mu    sync.Mutex
	byKey map[string]any // answers of non-idempotent tools by idempotency key
}

func (s *server) agreement(id string) (agreement, error) {
	a, ok := s.agreements[id]
	if !ok {
		ids := make([]string, 0, len(s.agreements))
		for k := range s.agreements {
			ids = append(ids, k)
		}
		sort.Strings(ids)
		return a, fmt.Errorf("no agreement %q (known: %s)", id, strings.Join(ids, ", "))
	}
	return a, nil
}

// replay answers a repeated call from the answer to the first call with the same key.
func (s *server) replay(req *mcp.CallToolRequest, tool string, answer func() (any, error)) (any, error) {
	key := ""
	if m := req.Params.GetMeta(); m != nil {
		key, _ = m["dev.ditto/idempotency_key"].(string)
	}
	if key == "" {
		return answer()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if out, ok := s.byKey[tool+"\x00"+key]; ok {
		return out, nil
	}
	out, err := answer()
	if err == nil {
		s.byKey[tool+"\x00"+key] = out
	}
	return out, err
}

type fetchIn struct {
	AgreementID string `json:"agreement_id" jsonschema:"the agreement's identifier, e.g. DPA-2024-017"`
}

type heading struct {
	ClauseID string `json:"clause_id"`
	Heading  string `json:"heading"`
}

type fetchOut struct {
	AgreementID string    `json:"agreement_id"`
	Controller  string    `json:"controller"`
	Processor   string    `json:"processor"`
	ClauseCount int       `json:"clause_count"`
	Clauses     []heading `json:"clauses"`
}

func (s *server) fetch(_ context.Context, _ *mcp.CallToolRequest, in fetchIn) (*mcp.CallToolResult, fetchOut, error) {
	a, err := s.agreement(in.AgreementID)
	if err != nil {
		return nil, fetchOut{}, err
	}
	out := fetchOut{AgreementID: in.AgreementID, Controller: a.Controller, Processor: a.Processor, ClauseCount: len(a.Clauses)}
	for _, c := range a.Clauses {
		out.Clauses = append(out.Clauses, heading{c.ID, c.Heading})
	}
	return nil, out, nil
}

type assessIn struct {
	AgreementID  string   `json:"agreement_id"`
	Requirements []string `json:"requirements,omitempty" jsonschema:"the Article 28(3) requirements to assess (default: all)"`
	IncludeText  bool     `json:"include_text,omitempty" jsonschema:"quote the clause that meets each requirement"`
}

type assessed struct {
	Requirement string `json:"requirement"`
	Status      string `json:"status"` // met or missing
	ClauseID    string `json:"clause_id,omitempty"`
	Text        string `json:"text,omitempty"`
}

type assessOut struct {
	AgreementID string     `json:"agreement_id"`
	Assessed    []assessed `json:"assessed"`
	Missing     []string   `json:"missing"`
}

func (s *server) assess(_ context.Context, _ *mcp.CallToolRequest, in assessIn) (*mcp.CallToolResult, assessOut, error) {
	a, err := s.agreement(in.AgreementID)
	if err != nil {
		return nil, assessOut{}, err
	}
	want := in.Requirements
	if len(want) == 0 {
		want = requirementNames()
	}
	out := assessOut{AgreementID: in.AgreementID, Missing: []string{}}
	for _, r := range requirements {
		if !slices.Contains(want, r.name) {
			continue
		}
		res := assessed{Requirement: r.name, Status: "missing"}
	clauses:
		for _, c := range a.Clauses {
			text := strings.ToLower(c.Text)
			for _, alt := range r.any {
				if containsAll(text, alt) {
					res.Status, res.ClauseID = "met", c.ID
					if in.IncludeText {
						res.Text = c.Text
					}
					break clauses
				}
			}
		}
		if res.Status == "missing" {
			out.Missing = append(out.Missing, r.name)
		}
		out.Assessed = append(out.Assessed, res)
	}
	for _, w := range want {
		if !slices.Contains(requirementNames(), w) {
			return nil, assessOut{}, fmt.Errorf("unknown requirement %q (known: %s)", w, strings.Join(requirementNames(), ", "))
		}
	}
	return nil, out, nil
}

func containsAll(text string, words []string) bool {
	for _, w := range words {
		if !strings.Contains(text, w) {
			return false
		}
	}
	return true
}

type amendIn struct {
	AgreementID string   `json:"agreement_id"`
	Missing     []string `json:"missing" jsonschema:"the requirements the amendment must add"`
	DueDays     int      `json:"due_days,omitempty" jsonschema:"days the processor has to sign the amendment (default 30)"`
}

type amendOut struct {
	TicketID    string   `json:"ticket_id"`
	AgreementID string   `json:"agreement_id"`
	Missing     []string `json:"missing"`
	DueDays     int      `json:"due_days"`
}

func (s *server) amend(_ context.Context, req *mcp.CallToolRequest, in amendIn) (*mcp.CallToolResult, amendOut, error) {
	out, err := s.replay(req, "request_amendment", func() (any, error) {
		if _, err := s.agreement(in.AgreementID); err != nil {
			return nil, err
		}
		if len(in.Missing) == 0 {
			return nil, errors.New("missing is empty: an amendment adds at least one clause")
		}
		missing := slices.Clone(in.Missing)
		slices.Sort(missing)
		due := in.DueDays
		if due == 0 {
			due = 30
		}
		sum := sha256.Sum256([]byte(in.AgreementID + "|" + strings.Join(missing, ",")))
		return amendOut{TicketID: "AMD-" + hex.EncodeToString(sum[:4]), AgreementID: in.AgreementID, Missing: missing, DueDays: due}, nil
	})
	if err != nil {
		return nil, amendOut{}, err
	}
	return nil, out.(amendOut), nil
}

type fileIn struct {
	AgreementID string   `json:"agreement_id"`
	Outcome     string   `json:"outcome" jsonschema:"compliant, amend or reject"`
	Missing     []string `json:"missing" jsonschema:"the requirements found missing"`
	TicketID    string   `json:"ticket_id,omitempty" jsonschema:"the amendment request, when one was opened"`
	Notes       string   `json:"notes,omitempty"`
}

type fileOut struct {
	ReviewID    string   `json:"review_id"`
	AgreementID string   `json:"agreement_id"`
	Outcome     string   `json:"outcome"`
	Missing     []string `json:"missing"`
	TicketID    string   `json:"ticket_id,omitempty"`
}

func (s *server) file(_ context.Context, req *mcp.CallToolRequest, in fileIn) (*mcp.CallToolResult, fileOut, error) {
	out, err := s.replay(req, "file_review", func() (any, error) {
		if _, err := s.agreement(in.AgreementID); err != nil {
			return nil, err
		}
		switch in.Outcome {
		case "compliant", "amend", "reject":
		default:
			return nil, fmt.Errorf("outcome %q: want compliant, amend or reject", in.Outcome)
		}
		missing := slices.Clone(in.Missing)
		if missing == nil {
			missing = []string{}
		}
		slices.Sort(missing)
		return fileOut{ReviewID: "REV-" + in.AgreementID, AgreementID: in.AgreementID, Outcome: in.Outcome, Missing: missing, TicketID: in.TicketID}, nil
	})
	if err != nil {
		return nil, fileOut{}, err
	}
	return nil, out.(fileOut), nil
}

func newServer() (*mcp.Server, error) {
	s := &server{byKey: map[string]any{}}
	if err := json.Unmarshal(agreementsJSON, &s.agreements); err != nil {
		return nil, fmt.Errorf("agreements.json: %w", err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "dpa-review", Version: "1.0.0"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "fetch_agreement", Description: "Fetch a data processing agreement: its parties and clause headings."}, s.fetch)
	mcp.AddTool(srv, &mcp.Tool{Name: "assess_requirements", Description: "Assess which Article 28(3) GDPR requirements the agreement's clauses meet."}, s.assess)
	mcp.AddTool(srv, &mcp.Tool{Name: "request_amendment", Description: "Open an amendment request adding the missing clauses."}, s.amend)
	mcp.AddTool(srv, &mcp.Tool{Name: "file_review", Description: "File the outcome of the agreement's review."}, s.file)
	return srv, nil
}

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. localhost:8765) instead of stdio")
	flag.Parse()
	srv, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	if *addr == "" {
		if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
			log.Fatal(err)
		}
		return
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	fmt.Fprintf(os.Stderr, "dpa-review: serving MCP over Streamable HTTP at http://%s/\n", *addr)
	log.Fatal(http.ListenAndServe(*addr, h))
}
