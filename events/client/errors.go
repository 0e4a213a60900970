package client

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors.
var (
	ErrConfig   = errors.New("client: invalid option")
	ErrRejected = errors.New("client: events rejected by the server")
	ErrServer   = errors.New("client: server error")
	ErrFinished = errors.New("client: run already finished")
)

// Rejected is one event the server refused, as it reported it.
type Rejected struct {
	Index  int    `json:"index"`
	Line   int    `json:"line,omitempty"`
	ID     string `json:"id,omitempty"`
	Reason string `json:"reason"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// BatchError lists the events of a send that the server refused for good (invalid, forbidden).
// The other events of the send were stored. It wraps ErrRejected.
type BatchError struct {
	Accepted int
	Rejected []Rejected
}

func (e *BatchError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d rejected, %d accepted", ErrRejected, len(e.Rejected), e.Accepted)
	for i, r := range e.Rejected {
		if i == 3 {
			fmt.Fprintf(&b, "; and %d more", len(e.Rejected)-3)
			break
		}
		fmt.Fprintf(&b, "; event %d (%s): %s", r.Index, r.Reason, r.Detail)
	}
	return b.String()
}

func (e *BatchError) Unwrap() error { return ErrRejected }

// StatusError is an answer the client does not retry (401, 403, 413, 400 ...). It wraps
// ErrServer.
type StatusError struct {
	Code    int
	Message string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("%v: HTTP %d: %s", ErrServer, e.Code, e.Message)
}

func (e *StatusError) Unwrap() error { return ErrServer }
