package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/cli"
	"github.com/dittolab/ditto/internal/study"
	"github.com/dittolab/ditto/internal/words"
)

// loadSpec reads a spec file or a shipped spec (builtin:NAME) and expands it.
func loadSpec(arg string) (*study.Plan, error) {
	var s *study.Spec
	if name, ok := strings.CutPrefix(arg, "builtin:"); ok {
		raw, err := study.ShippedSpec(name)
		if err != nil {
			return nil, err
		}
		if s, err = study.Parse(raw); err != nil {
			return nil, fmt.Errorf("%s: %w", arg, err)
		}
	} else {
		var err error
		if s, err = study.Load(arg); err != nil {
			return nil, err
		}
	}
	return study.Expand(s)
}

// checkPolicy checks a plan's endpoints against the workers' policy as given to the producer
// (--key-envs, --base-urls): a spec the workers would refuse is refused here, by field.
func checkPolicy(p *study.Plan, policy study.EndpointPolicy) error {
	if err := policy.Check(p.Spec); err != nil {
		return fmt.Errorf("%w\n(checked against --key-envs %q and --base-urls %q, which must match the workers' policy)",
			err, cmp.Or(policy.KeyEnvs, study.DefaultKeyEnvs), policy.BaseURLs)
	}
	return nil
}

func runStudyValidate(_ context.Context, fs *flag.FlagSet, args []string) error {
	var policy study.EndpointPolicy
	policy.RegisterFlags(fs)
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one SPEC (a JSON file, or builtin:NAME for a shipped spec: %s)", cli.ErrUsage, strings.Join(study.ShippedSpecs(), ", "))
	}
	if err := policy.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	p, err := loadSpec(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := checkPolicy(p, policy); err != nil {
		return err
	}
	printPlan(os.Stdout, p)
	fmt.Printf("valid: %d jobs would be published on ditto.jobs.%s\n", len(p.Jobs), p.Spec.Name)
	return nil
}

// submitConfig is the configuration of `producer study submit`.
type submitConfig struct {
	Bus     bus.Config
	Policy  study.EndpointPolicy // the workers' policy the spec's endpoints must keep to
	Wait    bool                 // wait until every run has finished
	Timeout time.Duration        // bound on Wait; 0: none
}

// Validate reports the first invalid setting.
func (c submitConfig) Validate() error {
	if c.Timeout < 0 {
		return errors.New("--timeout must be >= 0")
	}
	if err := c.Policy.Validate(); err != nil {
		return err
	}
	return c.Bus.Validate()
}

func runStudySubmit(ctx context.Context, fs *flag.FlagSet, args []string) error {
	var cfg submitConfig
	cfg.Bus.RegisterFlags(fs)
	cfg.Policy.RegisterFlags(fs)
	fs.BoolVar(&cfg.Wait, "wait", false, "wait until every run of the study has finished, showing progress")
	fs.DurationVar(&cfg.Timeout, "timeout", 0, "with --wait, give up after this long (0: no limit)")
	if err := cli.Parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one SPEC (a JSON file, or builtin:NAME for a shipped spec: %s)", cli.ErrUsage, strings.Join(study.ShippedSpecs(), ", "))
	}
	if err := cfg.Validate(); err != nil {
		return fmt.Errorf("%w: %w", cli.ErrUsage, err)
	}
	p, err := loadSpec(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := checkPolicy(p, cfg.Policy); err != nil {
		return err
	}
	if cfg.Bus.Name == "" {
		cfg.Bus.Name = "ditto-producer"
	}
	b, err := openBus(ctx, cfg.Bus)
	if err != nil {
		return err
	}
	defer b.Close()
	printPlan(os.Stdout, p)
	res, err := study.Submit(ctx, b, p, "producer")
	if err != nil {
		return err
	}
	switch {
	case res.AlreadyDefined:
		fmt.Printf("study %s was already submitted at %s with this spec: nothing published\n",
			res.Study, res.DefinedAt.Format(time.RFC3339))
	default:
		fmt.Printf("submitted study %s: %d jobs published on ditto.jobs.%s", res.Study, res.Published, res.Study)
		if res.Duplicates > 0 {
			fmt.Printf(" (%d already queued)", res.Duplicates)
		}
		fmt.Println("; study.defined recorded")
	}
	if !cfg.Wait {
		return nil
	}
	jobs, err := b.Stream(ctx, events.JobsStream)
	if err == nil {
		_, err = jobs.ConsumerInfo(ctx, events.WorkersConsumer)
	}
	if err != nil {
		fmt.Println("no harness-worker has connected yet; start one, e.g.: harness-worker run --data-dir " + cfg.Bus.DataDir)
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	return waitForStudy(ctx, b, p, os.Stdout)
}

func runStudyStatus(ctx context.Context, fs *flag.FlagSet, args []string) error {
	cfg, err := parseBusFlags(fs, args)
	if err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: name one study", cli.ErrUsage)
	}
	if cfg.Name == "" {
		cfg.Name = "ditto-producer"
	}
	b, err := openBus(ctx, cfg)
	if err != nil {
		return err
	}
	defer b.Close()
	p, at, err := study.Submitted(ctx, b, fs.Arg(0))
	if err != nil {
		return err
	}
	fmt.Printf("submitted at %s\n", at.Format(time.RFC3339))
	printPlan(os.Stdout, p)
	pr, err := study.GetProgress(ctx, b, p)
	if err != nil {
		return err
	}
	fmt.Printf("%d/%d runs finished, %d jobs queued or running\n", pr.Finished, pr.Expected, pr.Queued)
	return printOutcomes(ctx, b, p, os.Stdout)
}

// printPlan shows the matrix of a plan.
func printPlan(w io.Writer, p *study.Plan) {
	d := p.Defined
	paired := "unpaired"
	if d.Paired {
		paired = "paired across conditions"
	}
	fmt.Fprintf(w, "study %s: %d cells, %d runs, %s, seeds %s", d.Name, len(d.Cells), d.ExpectedRuns, paired, p.Spec.Seeds.Mode)
	if len(d.Simulated) > 0 {
		fmt.Fprintf(w, ", simulated models: %s", strings.Join(d.Simulated, ", "))
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  task\tmodel\tcondition\truns\tendpoint")
	for _, c := range d.Cells {
		ep := ""
		for _, j := range p.Jobs {
			if j.Task == c.Task && j.Model == c.Model && j.Condition == c.Condition {
				ep = j.Endpoint.Name
				break
			}
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%s\n", c.Task, c.Model, c.Condition, c.Runs, ep)
	}
	tw.Flush()
}

// waitForStudy polls the streams until no job of the study is queued or in flight and
// every run has a run.finished, printing progress, then prints the outcomes per cell.
func waitForStudy(ctx context.Context, b *bus.Bus, p *study.Plan, w io.Writer) error {
	start := time.Now()
	last := -1
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		pr, err := study.GetProgress(ctx, b, p)
		if err != nil {
			return err
		}
		if pr.Finished != last {
			fmt.Fprintf(w, "  %5.0fs  %d/%d runs finished, %d jobs queued or running\n", time.Since(start).Seconds(), pr.Finished, pr.Expected, pr.Queued)
			last = pr.Finished
		}
		if pr.Done() {
			fmt.Fprintf(w, "study %s complete: %d runs in %s\n", p.Spec.Name, pr.Finished, words.Duration(time.Since(start)))
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("study %s: %d/%d runs finished: %w (is a harness-worker running?)", p.Spec.Name, pr.Finished, pr.Expected, ctx.Err())
		case <-tick.C:
		}
	}
	return printOutcomes(ctx, b, p, w)
}

// printOutcomes prints each cell's runs by status, then the causes of the errored runs: those
// runs never reached their model or a tool server, and a study with any is an error (ErrErrored)
// — its metrics rest on fewer runs than planned, or on none.
func printOutcomes(ctx context.Context, b *bus.Bus, p *study.Plan, w io.Writer) error {
	outcomes, err := study.Outcomes(ctx, b, p)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  task\tmodel\tcondition\truns\tsucceeded\tfailed\tescalated\toverflow\terrored\taborted")
	causes := map[string]int{}
	errored := 0
	for _, o := range outcomes {
		st := o.Statuses
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", o.Task, o.Model, o.Condition, o.Runs,
			st[events.StatusSucceeded], st[events.StatusFailed], st[events.StatusEscalated], st[events.StatusOverflow],
			st[events.StatusErrored], st[events.StatusAborted])
		errored += st[events.StatusErrored]
		for c, n := range o.Causes {
			causes[c] += n
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if errored == 0 {
		return nil
	}
	list := make([]string, 0, len(causes))
	for c := range causes {
		list = append(list, c)
	}
	slices.SortFunc(list, func(a, b string) int { return cmp.Or(causes[b]-causes[a], strings.Compare(a, b)) })
	fmt.Fprintf(w, "%d runs errored (the model or a tool server was never reached or never answered; not scored):\n", errored)
	for _, c := range list {
		fmt.Fprintf(w, "  %d × %s\n", causes[c], c)
	}
	return fmt.Errorf("%w: study %s: %d runs errored, first cause %s", ErrErrored, p.Spec.Name, errored, list[0])
}

// ErrErrored: runs of the study errored (infrastructure, not the agent).
var ErrErrored = errors.New("runs errored")
