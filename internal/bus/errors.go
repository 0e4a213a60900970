package bus

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors.
var (
	ErrConfig      = errors.New("bus: invalid config")
	ErrPublish     = errors.New("bus: publish failed")
	ErrNotAcked    = errors.New("bus: publishes not acknowledged")
	ErrClosed      = errors.New("bus: publisher closed")
	ErrNoJetStream = errors.New("bus: JetStream is not available")
	// ErrShortRead says that a stream delivered fewer messages than it was asked to read.
	ErrShortRead = errors.New("bus: fewer messages delivered than asked for")
	// ErrNotDelivery says that a message's reply subject is not a JetStream acknowledgement
	// subject (DeliveryOf).
	ErrNotDelivery = errors.New("bus: not a JetStream delivery")
)

// PublishError is one publish that was not acknowledged.
type PublishError struct {
	Subject string
	MsgID   string
	Err     error
}

func (e PublishError) Error() string {
	return fmt.Sprintf("%s (msg id %s): %v", e.Subject, e.MsgID, e.Err)
}

// AckError lists every publish that failed since the last Wait. It wraps ErrNotAcked.
type AckError struct {
	Failed []PublishError
}

func (e *AckError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%v: %d failed", ErrNotAcked, len(e.Failed))
	for i, f := range e.Failed {
		if i == 5 {
			fmt.Fprintf(&b, "; and %d more", len(e.Failed)-5)
			break
		}
		b.WriteString("; ")
		b.WriteString(f.Error())
	}
	return b.String()
}

func (e *AckError) Unwrap() error { return ErrNotAcked }
