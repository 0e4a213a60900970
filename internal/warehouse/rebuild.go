package warehouse

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/dittolab/ditto/events"
	"github.com/dittolab/ditto/internal/bus"
)

// Rebuild replays the stream from its first message into a new database file at path (which
// must not exist: ErrExists) and returns once every message in the stream is stored. It uses
// its own durable consumer (cfg.Durable, default "ditto-rebuild-<pid>"), deleted at the end, so
// it does not disturb a running analyzer's consumer. The stream is the source of truth: the
// tables it builds equal those of an analyzer that ingested the same messages live.
func Rebuild(ctx context.Context, b *bus.Bus, path string, cfg IngestConfig) (err error) {
	if path == "" {
		return fmt.Errorf("%w: rebuild needs a file path", ErrConfig)
	}
	if _, err := os.Stat(path); err == nil {
		return fmt.Errorf("%w: %s", ErrExists, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("warehouse: rebuild: %w", err)
	}
	if cfg.Durable == "" || cfg.Durable == events.AnalyzerConsumer {
		cfg.Durable = fmt.Sprintf("ditto-rebuild-%d", os.Getpid())
	}
	stream := cfg.Stream
	if stream == "" {
		stream = events.EventsStream
	}
	defer func() { _ = b.DeleteConsumer(context.WithoutCancel(ctx), stream, cfg.Durable) }()
	w, err := Open(ctx, Config{Path: path})
	if err != nil {
		return err
	}
	defer func() {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}()
	return w.CatchUp(ctx, b, cfg)
}
