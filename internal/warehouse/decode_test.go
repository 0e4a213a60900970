package warehouse

import (
	"bytes"
	"testing"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/samples"
)

// onSubject agrees with comparing events.SubjectOf: on each sample event's own subject, and on
// every subject made from it by cutting it short, dropping one byte, doubling one byte or
// changing one byte to another (a dot, a letter, the end of another token).
func TestOnSubject(t *testing.T) {
	n := 0
	for _, line := range bytes.Split(bytes.TrimSpace(samples.Traces), []byte("\n")) {
		e, err := events.Decode(line)
		if err != nil {
			t.Fatal(err)
		}
		subj, err := events.SubjectOf(&e)
		if err != nil {
			t.Fatal(err)
		}
		var cands []string
		for i := 0; i <= len(subj); i++ {
			cands = append(cands, subj[:i], subj[:i]+"."+subj[i:])
			if i < len(subj) {
				cands = append(cands, subj[:i]+subj[i+1:], subj[:i+1]+subj[i:], subj[:i]+"x"+subj[i+1:], subj[:i]+"."+subj[i+1:])
			}
		}
		cands = append(cands, subj+"x", "x"+subj, events.EventsPrefix+"."+e.Run+"."+e.Study+"."+string(e.Type))
		for _, c := range cands {
			if got, want := onSubject(c, &e), c == subj; got != want {
				t.Errorf("onSubject(%q) of %s/%s/%s = %v, want %v", c, e.Study, e.Run, e.Type, got, want)
			}
			n++
		}
	}
	if n == 0 {
		t.Fatal("no sample event")
	}
}
