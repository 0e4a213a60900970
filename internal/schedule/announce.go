package schedule

import (
	"context"
	"fmt"
	"time"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
	"github.com/dittolab/ditto/internal/report"
)

// Announce publishes a report.published event for a written report (study-level: run
// events.StudyRun) on the report's study and waits for JetStream to acknowledge it. dir is
// where the report's files are; alerts counts the alerts sent for it.
func Announce(ctx context.Context, b *bus.Bus, r *report.Report, dir string, alerts int) error {
	kind := events.SourceHarness
	if r.Kind == report.KindDrift || r.Metrics != nil && r.Metrics.Study.SourceKind == string(events.SourceProduction) {
		kind = events.SourceProduction
	}
	e := events.New(r.Study, events.StudyRun, time.Now(), events.ReportPublished{
		Name: r.Name, Path: dir, Formats: report.Formats, Studies: []string{r.Study}, Alerts: alerts,
	})
	e.Source = events.Source{Kind: kind, ID: "analyzer-reports"}
	pub, err := b.NewPublisher()
	if err != nil {
		return fmt.Errorf("schedule: announce %s: %w", r.Name, err)
	}
	if err := pub.PublishEvent(ctx, &e); err != nil {
		return fmt.Errorf("schedule: announce %s: %w", r.Name, err)
	}
	if err := pub.Wait(ctx); err != nil {
		return fmt.Errorf("schedule: announce %s: %w", r.Name, err)
	}
	return nil
}
