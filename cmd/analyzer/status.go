package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/queryapi"
)

type statusConfig struct {
	target   target
	watch    bool
	interval time.Duration
	bars     bool // draw progress bars (a terminal)
}

func runStatus(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg statusConfig
	cfg.target.registerFlags(fs)
	fs.BoolVar(&cfg.watch, "watch", false, "redraw until interrupted or every study is done")
	fs.DurationVar(&cfg.interval, "interval", 2*time.Second, "with --watch, how often to redraw")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected arguments %q", cli.ErrUsage, fs.Args())
	}
	if cfg.interval < 100*time.Millisecond {
		return fmt.Errorf("%w: --interval %v is too short", cli.ErrUsage, cfg.interval)
	}
	cfg.target.resolve()
	cfg.bars = term.IsTerminal(int(os.Stdout.Fd()))
	return status(ctx, cfg, os.Stdout)
}

func status(ctx context.Context, cfg statusConfig, out io.Writer) error {
	for first := true; ; first = false {
		st, err := readStudies(ctx, cfg.target)
		if err != nil {
			return err
		}
		var b strings.Builder
		if cfg.watch {
			if cfg.bars {
				b.WriteString("\033[H\033[2J") // home and clear: redraw in place
			} else if !first {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s\n", time.Now().Format("15:04:05"))
		}
		writeStatus(&b, st, cfg.bars)
		if _, err := io.WriteString(out, b.String()); err != nil {
			return err
		}
		if !cfg.watch || allDone(st) {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(cfg.interval):
		}
	}
}

// readStudies asks a serving analyzer, or reads the file when none serves it. The file is
// opened for each read, so that a watch does not hold it open between redraws.
func readStudies(ctx context.Context, t target) ([]queryapi.Study, error) {
	c, err := t.client(ctx)
	if err != nil {
		return nil, err
	}
	if c != nil {
		return c.Studies(ctx)
	}
	db, err := t.open(ctx)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return queryapi.ReadStudies(ctx, db)
}

// allDone reports whether every study has an expected count and has reached it; a watch over
// production traces (no expected count) goes on until interrupted.
func allDone(st []queryapi.Study) bool {
	for _, s := range st {
		if s.ExpectedRuns == nil || !s.Done {
			return false
		}
	}
	return len(st) > 0
}

// writeStatus writes one line per study: a progress bar on a terminal, plain text otherwise.
// Studies without an expected count (production traces) show what has arrived.
func writeStatus(w io.Writer, st []queryapi.Study, bars bool) {
	if len(st) == 0 {
		fmt.Fprintln(w, "no studies yet")
		return
	}
	width := 0
	for _, s := range st {
		width = max(width, len(s.Study))
	}
	for _, s := range st {
		extra := fmt.Sprintf("incomplete %d, succeeded %d", s.IncompleteRuns, s.SucceededRuns)
		if s.FoldErrors > 0 {
			extra = fmt.Sprintf("incomplete %d (%d with a gap or a refused event), succeeded %d", s.IncompleteRuns, s.FoldErrors, s.SucceededRuns)
		}
		if s.ErroredRuns > 0 {
			extra += fmt.Sprintf(", errored %d (never reached the model or a tool; not scored: analyzer metrics gives the causes)", s.ErroredRuns)
		}
		if s.ExpectedRuns == nil {
			fmt.Fprintf(w, "%-*s  %d runs finished (no expected count: %s traces), %s\n",
				width, s.Study, s.FinishedRuns, orDefault(s.SourceKind, "unplanned"), extra)
			continue
		}
		exp := *s.ExpectedRuns
		if bars && exp > 0 {
			pb := progressbar.NewOptions64(exp,
				progressbar.OptionSetWriter(io.Discard),
				progressbar.OptionSetWidth(30),
				progressbar.OptionSetDescription(fmt.Sprintf("%-*s", width, s.Study)),
				progressbar.OptionShowCount(),
				progressbar.OptionSetPredictTime(false),
				progressbar.OptionSetElapsedTime(false),
			)
			_ = pb.Set64(min(s.FinishedRuns, exp))
			fmt.Fprintf(w, "%s  %s\n", strings.TrimSpace(pb.String()), extra)
			continue
		}
		pct := 0.0
		if s.Progress != nil {
			pct = 100 * *s.Progress
		}
		fmt.Fprintf(w, "%-*s  %d/%d runs finished (%.1f%%), %s\n", width, s.Study, s.FinishedRuns, exp, pct, extra)
	}
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
