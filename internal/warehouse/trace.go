package warehouse

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// traceOn prints the time of each step of every batch to stderr (DITTO_WAREHOUSE_TRACE=1), for
// tuning.
var traceOn = os.Getenv("DITTO_WAREHOUSE_TRACE") != ""

type trace struct {
	last  time.Time
	steps []string
}

func newTrace() *trace {
	if !traceOn {
		return nil
	}
	return &trace{last: time.Now()}
}

func (t *trace) mark(step string) {
	if t == nil {
		return
	}
	now := time.Now()
	t.steps = append(t.steps, fmt.Sprintf("%s=%v", step, now.Sub(t.last).Round(10*time.Microsecond)))
	t.last = now
}

// note adds a step that is not a time, key=value (e.g. cut=quiet).
func (t *trace) note(key, value string) {
	if t != nil {
		t.steps = append(t.steps, key+"="+value)
	}
}

func (t *trace) print(n int) {
	if t == nil {
		return
	}
	fmt.Fprintf(os.Stderr, "warehouse: batch of %d: %s\n", n, strings.Join(t.steps, " "))
}
