package schedule

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/report"
	"github.com/go-co-op/gocron/v2"
	"github.com/jonboulle/clockwork"
	"github.com/robfig/cron/v3"
)

// DefaultDriftWindow is the window of production drift reports: the last day against the day
// before.
const DefaultDriftWindow = 24 * time.Hour

// Config configures a Scheduler.
type Config struct {
	// Cron is the schedule: five fields (minute hour day month weekday), six with a leading
	// seconds field, or a descriptor such as "@hourly" or "@every 10m".
	Cron string
	// ReportsDir receives one directory per report and the scheduler's state file.
	ReportsDir string
	// WebhookURL, when set, receives a POST (JSON, Alert) for each report with comparisons
	// that turned significant in the bad direction.
	WebhookURL string
	// DriftWindow is the window of the production drift reports (default DefaultDriftWindow).
	DriftWindow time.Duration
	// Report configures the reports' analysis.
	Report report.Options
	// Clock is the scheduler's clock (nil: the real clock); tests pass a fake one.
	Clock clockwork.Clock
	// HTTPClient posts the alerts (nil: a client with a 10 s timeout).
	HTTPClient *http.Client
	Logger     *slog.Logger
}

// parser accepts five or six fields and descriptors, as gocron's CronJob does.
var parser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

func hasSeconds(expr string) bool {
	return !strings.HasPrefix(strings.TrimSpace(expr), "@") && len(strings.Fields(expr)) == 6
}

// Validate reports the first invalid setting.
func (c Config) Validate() error {
	if _, err := parser.Parse(c.Cron); err != nil {
		return fmt.Errorf("%w: cron %q: %v", ErrConfig, c.Cron, err)
	}
	if c.ReportsDir == "" {
		return fmt.Errorf("%w: reports directory is required", ErrConfig)
	}
	if c.DriftWindow < 0 {
		return fmt.Errorf("%w: drift window %v", ErrConfig, c.DriftWindow)
	}
	if c.WebhookURL != "" && !strings.HasPrefix(c.WebhookURL, "http://") && !strings.HasPrefix(c.WebhookURL, "https://") {
		return fmt.Errorf("%w: the webhook is not an http(s) URL (not shown: it may be a credential)", ErrConfig)
	}
	return nil
}

// Scheduler regenerates reports on a cron schedule: every study with events stored since its
// last report (harness and production alike; stream sequences tell, not event times), and for
// every production study a drift report (the last DriftWindow against the one before). Each
// report is written into ReportsDir, announced on NATS (report.published) and, when
// comparisons turned significant in the bad direction, alerted to the webhook, once per
// finding. The scheduler's state (the last run, each study's stream sequence, the findings
// alerted) is kept in ReportsDir: a run missed while the analyzer was down is made once on
// Start.
type Scheduler struct {
	db   *sql.DB
	bus  *bus.Bus
	cfg  Config
	spec cron.Schedule
	log  *slog.Logger

	mu    sync.Mutex // one run at a time
	sched gocron.Scheduler
}

// New returns a Scheduler reading db and announcing on b (nil: no announcements).
func New(db *sql.DB, b *bus.Bus, cfg Config) (*Scheduler, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.DriftWindow == 0 {
		cfg.DriftWindow = DefaultDriftWindow
	}
	if cfg.Clock == nil {
		cfg.Clock = clockwork.NewRealClock()
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	spec, _ := parser.Parse(cfg.Cron) // validated
	return &Scheduler{db: db, bus: b, cfg: cfg, spec: spec, log: cfg.Logger}, nil
}

// Missed reports whether a scheduled run fell between the last recorded run and now (false
// when no run was ever recorded).
func (s *Scheduler) Missed(now time.Time) (bool, error) {
	st, err := loadState(s.cfg.ReportsDir)
	if err != nil {
		return false, err
	}
	if st.LastRun.IsZero() {
		return false, nil
	}
	return !s.spec.Next(st.LastRun).After(now), nil
}

// Start makes the missed run, if any, then schedules the runs until Stop. Errors of a
// scheduled run are logged, not returned: the next run tries again.
func (s *Scheduler) Start(ctx context.Context) error {
	missed, err := s.Missed(s.cfg.Clock.Now())
	if err != nil {
		return err
	}
	if missed {
		s.log.Info("reports: a scheduled run was missed while the analyzer was down; running it now")
		if _, err := s.RunOnce(ctx); err != nil {
			s.log.Error("reports: missed run", "err", err)
		}
	}
	sched, err := gocron.NewScheduler(gocron.WithClock(s.cfg.Clock), gocron.WithLocation(time.UTC))
	if err != nil {
		return fmt.Errorf("schedule: %w", err)
	}
	_, err = sched.NewJob(gocron.CronJob(s.cfg.Cron, hasSeconds(s.cfg.Cron)), gocron.NewTask(func() {
		if _, err := s.RunOnce(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("reports: scheduled run", "err", err)
		}
	}), gocron.WithSingletonMode(gocron.LimitModeReschedule))
	if err != nil {
		_ = sched.Shutdown()
		return fmt.Errorf("schedule: %w", err)
	}
	sched.Start()
	s.sched = sched
	return nil
}

// Stop stops scheduling and waits for a run in progress.
func (s *Scheduler) Stop() error {
	if s.sched == nil {
		return nil
	}
	err := s.sched.Shutdown()
	s.mu.Lock() // wait for a run in progress
	s.mu.Unlock()
	return err
}

// Generated is one report a run wrote.
type Generated struct {
	Name   string
	Dir    string
	Report *report.Report
	// Alerted are the bad findings newly alerted.
	Alerted []report.Finding
}

// RunResult says what one run did.
type RunResult struct {
	At      time.Time
	Reports []Generated
	// Skipped are studies without new events since their last report.
	Skipped []string
}

// job is one report a run makes.
type job struct {
	name  string
	build func() (*report.Report, error)
}

// RunOnce regenerates the reports now (the Clock's now), records the run, and returns what it
// wrote. A study's report is made again when an event of the study was stored after its last
// report (a higher stream sequence: back-fills, re-sends and late imports included, whatever
// their times); a production study's drift report is made at every run (its windows move). A
// report that fails is logged and skipped; the error of the last failure is returned with the
// result of the others.
//
// A bad finding alerts once: its key (alertKey: the report, the comparison and its direction)
// is kept in the state file while the finding stays bad, through runs that do not make its
// report again, runs whose report failed, findings held back by incomplete runs, and restarts.
func (s *Scheduler) RunOnce(ctx context.Context) (*RunResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.cfg.Clock.Now().UTC()
	st, err := loadState(s.cfg.ReportsDir)
	if err != nil {
		return nil, err
	}
	studies, err := s.studies(ctx)
	if err != nil {
		return nil, err
	}
	res := &RunResult{At: now}
	var lastErr error
	alerted := map[string]bool{}
	made := map[string]bool{} // reports whose findings this run established (made, or no data)
	for _, si := range studies {
		var jobs []job
		prev, reported := st.Seqs[si.Study]
		if !reported || si.LastSeq > prev {
			jobs = append(jobs, job{si.Study, func() (*report.Report, error) { return s.buildStudy(ctx, si.Study) }})
		} else {
			res.Skipped = append(res.Skipped, si.Study)
		}
		if si.SourceKind == "production" {
			jobs = append(jobs, job{report.DriftName(si.Study), func() (*report.Report, error) { return s.buildDrift(ctx, si.Study, now) }})
		}
		failed := false
		for _, j := range jobs {
			r, err := j.build()
			if errors.Is(err, report.ErrNoData) || errors.Is(err, analysis.ErrNoRuns) {
				made[j.name] = true // nothing to report yet, so nothing is bad
				continue
			}
			if err != nil {
				s.log.Error("reports: build", "study", si.Study, "err", err)
				lastErr, failed = err, true
				continue
			}
			g, err := s.publish(ctx, r, st, alerted)
			if err != nil {
				s.log.Error("reports: publish", "report", r.Name, "err", err)
				lastErr, failed = err, true
				continue
			}
			made[j.name] = true
			res.Reports = append(res.Reports, g)
		}
		if !failed { // a failed study is tried again at the next run
			st.Seqs[si.Study] = si.LastSeq
		}
	}
	// A report not made again in this run (no new event, or it failed) keeps its alerted
	// findings, so that they do not alert twice; findings of a report made again and no longer
	// bad may alert again when they turn bad anew.
	for k := range st.Alerted {
		if name, _, _ := strings.Cut(k, "|"); !made[name] {
			alerted[k] = true
		}
	}
	st.Alerted = alerted
	st.LastRun = now
	if err := saveState(s.cfg.ReportsDir, st); err != nil {
		return res, err
	}
	s.log.Info("reports: run", "at", now, "reports", len(res.Reports), "skipped", len(res.Skipped))
	return res, lastErr
}

func (s *Scheduler) studies(ctx context.Context) ([]report.StudyInfo, error) {
	return report.Studies(ctx, analysis.SQLQuerier(s.db))
}

// snapshot runs f in a read transaction: one snapshot per report.
func (s *Scheduler) snapshot(ctx context.Context, f func(q analysis.Querier) (*report.Report, error)) (*report.Report, error) {
	q, done, err := analysis.Snapshot(ctx, s.db)
	if err != nil {
		return nil, fmt.Errorf("schedule: %w", err)
	}
	defer done()
	return f(q)
}

func (s *Scheduler) buildStudy(ctx context.Context, study string) (*report.Report, error) {
	return s.snapshot(ctx, func(q analysis.Querier) (*report.Report, error) {
		return report.Build(ctx, q, study, s.cfg.Report)
	})
}

func (s *Scheduler) buildDrift(ctx context.Context, study string, now time.Time) (*report.Report, error) {
	return s.snapshot(ctx, func(q analysis.Querier) (*report.Report, error) {
		return report.BuildDrift(ctx, q, study, now, s.cfg.DriftWindow, s.cfg.Report)
	})
}

// alertable says whether a report's bad findings are regressions: a drift report (time
// windows) or a production study (consecutive releases). A harness study's conditions are
// designs compared side by side, not a change over time.
func alertable(r *report.Report) bool {
	return r.Kind == report.KindDrift || r.Metrics != nil && r.Metrics.Study.SourceKind == "production"
}

// alertKey identifies a bad finding across regenerations and restarts: the report (the study,
// or its drift report), the comparison (task, model, conditions A and B, quantity) and its
// direction. A study name is a subject token and holds no "|".
func alertKey(r *report.Report, f report.Finding) string {
	return strings.Join([]string{r.Name, f.Task, f.Model, f.ConditionA, f.ConditionB, f.Quantity, f.Direction}, "|")
}

// publish writes a report, alerts its new bad findings and announces it.
func (s *Scheduler) publish(ctx context.Context, r *report.Report, st *state, alerted map[string]bool) (Generated, error) {
	dir := filepath.Join(s.cfg.ReportsDir, r.Name)
	g := Generated{Name: r.Name, Dir: dir, Report: r}
	if err := report.Write(dir, r); err != nil {
		return g, err
	}
	if alertable(r) {
		for _, f := range r.Findings {
			if !f.Bad {
				continue
			}
			k := alertKey(r, f)
			if f.IncompleteRuns > 0 {
				// No alert is computed from cells holding incomplete runs (the report says
				// so); one already sent stays sent.
				if st.Alerted[k] {
					alerted[k] = true
				}
				continue
			}
			alerted[k] = true
			if !st.Alerted[k] {
				g.Alerted = append(g.Alerted, f)
			}
		}
	}
	if len(g.Alerted) > 0 && s.cfg.WebhookURL != "" {
		if err := s.alert(ctx, r, dir, g.Alerted); err != nil {
			// Not alerted: forget the keys so that the next run tries again.
			for _, f := range g.Alerted {
				delete(alerted, alertKey(r, f))
			}
			return g, err
		}
	}
	if s.bus != nil {
		if err := Announce(ctx, s.bus, r, dir, len(g.Alerted)); err != nil {
			return g, err
		}
	}
	return g, nil
}
