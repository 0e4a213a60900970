package schedule

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// StateFile is the scheduler's state in the reports directory.
const StateFile = "schedule-state.json"

// state is what the scheduler remembers between runs and restarts.
type state struct {
	// LastRun is the time of the last completed run.
	LastRun time.Time `json:"last_run"`
	// Seqs maps each reported study to the highest stream sequence of its events at that
	// report: the study's report is made again when an event is stored with a higher one,
	// whatever the event's time. (State files of earlier versions kept the latest event time
	// under "studies"; it is ignored, and each study is reported once more.)
	Seqs map[string]uint64 `json:"study_seqs"`
	// Alerted holds the keys (alertKey) of the bad findings alerted and still bad at the last
	// run.
	Alerted map[string]bool `json:"alerted"`
}

func loadState(dir string) (*state, error) {
	st := &state{Seqs: map[string]uint64{}, Alerted: map[string]bool{}}
	b, err := os.ReadFile(filepath.Join(dir, StateFile))
	if errors.Is(err, os.ErrNotExist) {
		return st, nil
	}
	if err != nil {
		return nil, fmt.Errorf("schedule: state: %w", err)
	}
	if err := json.Unmarshal(b, st); err != nil {
		return nil, fmt.Errorf("schedule: state %s: %w", filepath.Join(dir, StateFile), err)
	}
	if st.Seqs == nil {
		st.Seqs = map[string]uint64{}
	}
	if st.Alerted == nil {
		st.Alerted = map[string]bool{}
	}
	return st, nil
}

// saveState writes the state through a temporary file renamed into place.
func saveState(dir string, st *state) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("schedule: state: %w", err)
	}
	tmp := filepath.Join(dir, "."+StateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("schedule: state: %w", err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, StateFile)); err != nil {
		return fmt.Errorf("schedule: state: %w", err)
	}
	return nil
}
