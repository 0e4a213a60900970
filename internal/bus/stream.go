package bus

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// EnsureStreams creates DITTO_EVENTS, DITTO_JOBS, DITTO_REJECTED_JOBS and DITTO_SPANS, or updates them to
// the current config (replicas, duplicate window). It is idempotent and safe to call from every
// process at start. It never lowers the replica count of an existing stream: a process started
// without --replicas 3 against a cluster whose streams are R3 must not scale them down to R1
// (it raises them when asked for more).
func (b *Bus) EnsureStreams(ctx context.Context) error {
	for _, cfg := range []jetstream.StreamConfig{
		EventsStreamConfig(b.cfg.Replicas, b.cfg.DuplicateWindow),
		JobsStreamConfig(b.cfg.Replicas, b.cfg.DuplicateWindow),
		RejectedJobsStreamConfig(b.cfg.Replicas, b.cfg.DuplicateWindow),
		SpansStreamConfig(b.cfg.Replicas, b.cfg.DuplicateWindow),
	} {
		if s, err := b.jetStream().Stream(ctx, cfg.Name); err == nil {
			if have := s.CachedInfo().Config.Replicas; have > cfg.Replicas {
				cfg.Replicas = have
			}
		}
		if _, err := b.jetStream().CreateOrUpdateStream(ctx, cfg); err != nil {
			return fmt.Errorf("bus: ensure stream %s: %w", cfg.Name, err)
		}
	}
	return nil
}

// OpenWithStreams is Open followed by EnsureStreams: what every ditto process does at start.
// On error nothing is left open.
func OpenWithStreams(ctx context.Context, cfg Config) (*Bus, error) {
	b, err := Open(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if err := b.EnsureStreams(ctx); err != nil {
		_ = b.Close()
		return nil, err
	}
	return b, nil
}
