package main

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/dittolab/ditto/internal/analysis"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/report"
	"github.com/dittolab/ditto/internal/schedule"
)

// ReportsPrefix is where serve shows the reports directory: an index page and each report.
const ReportsPrefix = "/reports/"

// reportsConfig is serve's scheduled-reports configuration.
type reportsConfig struct {
	schedule    string
	dir         string
	webhook     string
	driftWindow time.Duration
}

func (c *reportsConfig) registerFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.schedule, "report-schedule", "", `regenerate the reports of active studies and production drift on this cron schedule ("0 6 * * *", "@hourly", six fields for seconds); empty: no scheduled reports`)
	fs.StringVar(&c.dir, "reports-dir", "", "reports directory, served under "+ReportsPrefix+" (default <data-dir>/reports)")
	// A webhook URL is often a credential itself (Slack's, for one): a secret.
	cli.Secret(fs, &c.webhook, "webhook", "DITTO_WEBHOOK", "POST an alert (JSON) to this URL when a drift or release comparison turns significant in the bad direction")
	fs.DurationVar(&c.driftWindow, "drift-window", schedule.DefaultDriftWindow, "production drift reports compare the last window of this length with the one before")
}

func (c *reportsConfig) resolve(dataDir string) {
	if c.dir == "" {
		c.dir = filepath.Join(dataDir, "reports")
	}
}

func (c *reportsConfig) scheduleConfig(log *slog.Logger) schedule.Config {
	return schedule.Config{Cron: c.schedule, ReportsDir: c.dir, WebhookURL: c.webhook, DriftWindow: c.driftWindow,
		Report: report.Options{Analysis: analysis.Options{Seed: DefaultMetricsSeed}}, Logger: log}
}

func (c *reportsConfig) validate() error {
	if c.schedule == "" {
		if c.webhook != "" {
			return fmt.Errorf("--webhook needs --report-schedule")
		}
		return nil
	}
	// Checked here so that the error does not quote the URL, which may be a credential.
	if c.webhook != "" && !strings.HasPrefix(c.webhook, "http://") && !strings.HasPrefix(c.webhook, "https://") {
		return fmt.Errorf("--webhook is not an http(s) URL (the value is not shown)")
	}
	return c.scheduleConfig(nil).Validate()
}

// withReports serves the reports directory under ReportsPrefix beside the API, behind the
// same bearer token.
func withReports(api http.Handler, dir, token string) http.Handler {
	mux := http.NewServeMux()
	reports := report.Handler(dir, ReportsPrefix)
	mux.Handle(ReportsPrefix, bearer(token, reports))
	mux.Handle("/", api)
	return mux
}

// bearer lets a request through to next only with "Authorization: Bearer <token>"; an empty
// token lets every request through.
func bearer(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(token)) != 1 {
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// startReports starts the report scheduler when a schedule is set (a missed run is made at
// once); stop waits for a run in progress.
func startReports(ctx context.Context, db *sql.DB, b *bus.Bus, c reportsConfig, log *slog.Logger) (stop func(), err error) {
	if c.schedule == "" {
		return func() {}, nil
	}
	s, err := schedule.New(db, b, c.scheduleConfig(log))
	if err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, err
	}
	log.Info("scheduled reports", "cron", c.schedule, "dir", c.dir, "webhook", c.webhook != "", "drift_window", c.driftWindow)
	return func() {
		if err := s.Stop(); err != nil {
			log.Warn("stop reports", "err", err)
		}
	}, nil
}
