package console

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/dittolab/ditto/queries"
)

// studyRow is one study on the Studies page and in its progress stream.
type studyRow struct {
	Study      string `json:"study"`
	Name       string `json:"name"`
	SourceKind string `json:"source_kind"`
	// Expected is null for studies without a definition (production traces).
	Expected   *int64 `json:"expected_runs"`
	Runs       int64  `json:"runs"`
	Finished   int64  `json:"finished_runs"`
	Succeeded  int64  `json:"succeeded_runs"`
	Errored    int64  `json:"errored_runs"`
	Incomplete int64  `json:"incomplete_runs"`
	// LastEvent is the time of the study's latest event (RFC 3339, UTC; "" without events).
	LastEvent string `json:"last_event"`
	// Progress is "finished / expected" (or the finished count alone), as the page prints it.
	Progress string `json:"progress"`
	// Percent is finished / expected in whole percent, -1 without an expectation.
	Percent int `json:"percent"`
}

func (c *Console) readStudies(ctx context.Context) ([]studyRow, error) {
	rows, _, err := c.rd.query(ctx, queries.ConsoleStudies)
	if err != nil {
		return nil, err
	}
	out := make([]studyRow, 0, len(rows))
	for _, r := range rows {
		s := studyRow{Study: str(r[0]), Name: str(r[1]), SourceKind: str(r[2]), Runs: integer(r[4]),
			Finished: integer(r[5]), Succeeded: integer(r[6]), Errored: integer(r[7]), Incomplete: integer(r[8]), Percent: -1}
		if r[3] != nil {
			e := integer(r[3])
			s.Expected = &e
		}
		if r[9] != nil {
			s.LastEvent = micros(r[9]).Format(time.RFC3339)
		}
		s.Progress = progressText(s.Finished, s.Expected)
		if s.Expected != nil && *s.Expected > 0 {
			s.Percent = int(min(100, s.Finished*100 / *s.Expected))
		}
		out = append(out, s)
	}
	return out, nil
}

func progressText(finished int64, expected *int64) string {
	if expected == nil {
		return fmt.Sprint(finished)
	}
	return fmt.Sprintf("%d / %d", finished, *expected)
}

func (c *Console) studiesPage(w http.ResponseWriter, r *http.Request) error {
	st, err := c.readStudies(r.Context())
	if err != nil {
		return err
	}
	c.render(w, r, "studies", http.StatusOK, pageData{Title: "Studies", Nav: "studies", Data: st})
	return nil
}

// watermark returns the highest stored stream sequence of study ("" for every study).
func (c *Console) watermark(ctx context.Context, study string) (int64, error) {
	var arg any
	if study != "" {
		arg = study
	}
	rows, _, err := c.rd.query(ctx, queries.ConsoleWatermark, arg)
	if err != nil {
		return 0, err
	}
	if len(rows) == 0 {
		return 0, nil
	}
	return integer(rows[0][0]), nil
}

// progressStream is the Studies page's Server-Sent Events stream: an event "progress" with
// every study's row (JSON) whenever stored events moved, checked every Config.Poll, and a
// comment every 15 s so that proxies keep the connection.
func (c *Console) progressStream(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if err := rc.Flush(); err != nil {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(c.cfg.Poll)
	defer tick.Stop()
	last := int64(-1)
	lastSent := time.Now()
	for {
		if wm, err := c.watermark(ctx, ""); err == nil && wm != last {
			st, err := c.readStudies(ctx)
			if err == nil {
				b, _ := json.Marshal(st)
				if _, err := fmt.Fprintf(w, "event: progress\ndata: %s\n\n", b); err != nil {
					return
				}
				last, lastSent = wm, time.Now()
			}
		} else if time.Since(lastSent) > 15*time.Second {
			if _, err := fmt.Fprint(w, ": keep-alive\n\n"); err != nil {
				return
			}
			lastSent = time.Now()
		}
		if err := rc.Flush(); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-c.ctx.Done():
			return
		case <-tick.C:
		}
	}
}
