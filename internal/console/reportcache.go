package console

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/report"
)

// studyReport is one computation of a study's report (its metrics, comparisons, each cell's
// components): what the Study page shows.
type studyReport struct {
	Watermark int64          // the study's highest stream sequence when it was computed
	Report    *report.Report // nil when Err is set
	Err       error
	Took      time.Duration
	At        time.Time
	// Drift is a production study's drift chart (nil for a harness study); DriftErr says why
	// it could not be computed.
	Drift    *driftChart
	DriftErr error
}

// reportCache holds the latest report of each study and computes a new one in the background
// when the study's events have moved since; one computation runs at a time (they are CPU
// bound, and the machine is shared with ingestion).
type reportCache struct {
	c       *Console
	mu      sync.Mutex
	entries map[string]*cacheEntry
	sem     chan struct{}
}

type cacheEntry struct {
	cur     *studyReport
	running bool
}

func newReportCache(c *Console) *reportCache {
	return &reportCache{c: c, entries: map[string]*cacheEntry{}, sem: make(chan struct{}, 1)}
}

// get returns the latest report of study (nil before the first is computed) and whether a
// newer one is being computed; it starts that computation when the study moved past the
// latest report.
func (rc *reportCache) get(ctx context.Context, study string) (*studyReport, bool, error) {
	wm, err := rc.c.watermark(ctx, study)
	if err != nil {
		return nil, false, err
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e := rc.entries[study]
	if e == nil {
		e = &cacheEntry{}
		rc.entries[study] = e
	}
	if (e.cur == nil || e.cur.Watermark != wm) && !e.running {
		e.running = true
		rc.c.wg.Add(1)
		go func() {
			defer rc.c.wg.Done()
			rc.compute(study, wm)
		}()
	}
	return e.cur, e.running, nil
}

// wait blocks until a report of study computed at or after the call exists, or ctx ends (the
// warm-up and tests use it). On a study whose events keep moving, that report may already be
// behind them.
func (rc *reportCache) wait(ctx context.Context, study string) (*studyReport, error) {
	begin := time.Now()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		cur, running, err := rc.get(ctx, study)
		if err != nil {
			return nil, err
		}
		if cur != nil && (!running || !cur.At.Before(begin)) {
			return cur, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
	}
}

func (rc *reportCache) compute(study string, wm int64) {
	ctx := rc.c.ctx
	select {
	case rc.sem <- struct{}{}:
	case <-ctx.Done():
		rc.finish(study, nil)
		return
	}
	defer func() { <-rc.sem }()
	start := time.Now()
	rep, err := report.Build(ctx, rc.c.rd, study, report.Options{Analysis: rc.c.cfg.Analysis})
	if ctx.Err() != nil {
		rc.finish(study, nil)
		return
	}
	sr := &studyReport{Watermark: wm, Report: rep, Err: err}
	if errors.Is(err, analysis.ErrNoRuns) || errors.Is(err, analysis.ErrNoStudy) {
		sr.Report = nil
	}
	if s, err := rc.c.findStudy(ctx, study); err == nil && s.SourceKind == "production" {
		sr.Drift, sr.DriftErr = rc.c.computeDrift(ctx, study)
	}
	if ctx.Err() != nil {
		rc.finish(study, nil)
		return
	}
	sr.Took, sr.At = time.Since(start), time.Now()
	rc.c.cfg.Logger.Info("console: study metrics computed", "study", study, "watermark", wm,
		"ms", sr.Took.Milliseconds(), "err", err)
	rc.finish(study, sr)
}

func (rc *reportCache) finish(study string, sr *studyReport) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	e := rc.entries[study]
	e.running = false
	if sr != nil {
		e.cur = sr
	}
}

// warm computes every study's report once, one after the other, so that the first visit of
// a Study page finds it.
func (rc *reportCache) warm(ctx context.Context) {
	st, err := rc.c.readStudies(ctx)
	if err != nil {
		if ctx.Err() == nil {
			rc.c.cfg.Logger.Warn("console: warm-up", "err", err)
		}
		return
	}
	for _, s := range st {
		if _, err := rc.wait(ctx, s.Study); err != nil {
			return
		}
	}
}
