// Package leaktest checks that a test left no goroutine running, as goleak.VerifyNone does,
// with a longer wait for goroutines that are on their way out.
//
// goleak.VerifyNone retries for about 0.4 s in all (goleak v1.3.0, whose retry options are not
// exported). Goroutines that a library stops asynchronously (the NATS client's, after a
// consumer's Stop; a server's after its Shutdown) can take longer than that on a loaded
// machine, which made a correct test fail. VerifyNone here retries for up to Wait.
package leaktest

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Wait is how long VerifyNone waits for the goroutines left to exit.
const Wait = 10 * time.Second

// VerifyNone reports, with t.Error, the goroutines still running Wait after the call that
// opts do not ignore; it returns as soon as there are none.
func VerifyNone(t testing.TB, opts ...goleak.Option) {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		err := goleak.Find(opts...)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Error(err)
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
