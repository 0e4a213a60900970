package otlpmap

import (
	"fmt"
	"strings"
	"time"
)

// Bucket is the time window a production run falls in, folded into its run id (and, with
// Config.BucketCondition, its condition) so that a cell can be compared across windows.
type Bucket string

// Buckets.
const (
	BucketNone  Bucket = "none"
	BucketHour  Bucket = "hour"
	BucketDay   Bucket = "day"
	BucketWeek  Bucket = "week" // ISO 8601 week
	BucketMonth Bucket = "month"
)

// Label returns the bucket of t: "" (none), h2026113009, d20261130, w2026W48, m202611. Labels
// of one bucket size sort in time order and are subject-safe.
func (b Bucket) Label(t time.Time) string {
	t = t.UTC()
	switch b {
	case BucketHour:
		return t.Format("h2006010215")
	case BucketDay:
		return t.Format("d20060102")
	case BucketWeek:
		y, w := t.ISOWeek()
		return fmt.Sprintf("w%04dW%02d", y, w)
	case BucketMonth:
		return t.Format("m200601")
	}
	return ""
}

// ParseBucket reads a bucket name.
func ParseBucket(s string) (Bucket, error) {
	switch b := Bucket(strings.ToLower(s)); b {
	case BucketNone, BucketHour, BucketDay, BucketWeek, BucketMonth:
		return b, nil
	case "":
		return BucketNone, nil
	}
	return "", fmt.Errorf("otlpmap: bucket %q: want none, hour, day, week or month", s)
}

// Config says how the cell (task, model, condition) of a production run is read from its
// spans. Each key list is tried in order on the run's root span, then on its resource; the
// model also falls back to the first inference span's model.
type Config struct {
	TaskKeys         []string
	ModelKeys        []string
	ConditionKeys    []string
	DefaultCondition string // when no condition key is set; default "production"
	Bucket           Bucket // default day
	// BucketCondition appends "@<bucket label>" to the condition, making each time window its
	// own condition so the ordinary between-condition comparisons compare windows.
	BucketCondition bool
	// MaxValueBytes caps one recorded JSON value (tool arguments, tool output, run output,
	// plan text); a larger value is replaced by {"sha256":…,"bytes":…,"truncated":true}, which
	// still compares equal exactly when the values are equal. Default 256 KiB.
	MaxValueBytes int
}

// Default attribute keys.
var (
	DefaultTaskKeys      = []string{"ditto.task", "gen_ai.agent.name", "traceloop.entity.name", "agent.name", "service.name"}
	DefaultModelKeys     = []string{"ditto.model", "gen_ai.request.model", "gen_ai.response.model", "llm.model_name"}
	DefaultConditionKeys = []string{"ditto.condition", "ditto.release", "service.version"}
)

// WithDefaults returns c with empty fields set to their defaults.
func (c Config) WithDefaults() Config {
	if len(c.TaskKeys) == 0 {
		c.TaskKeys = DefaultTaskKeys
	}
	if len(c.ModelKeys) == 0 {
		c.ModelKeys = DefaultModelKeys
	}
	if len(c.ConditionKeys) == 0 {
		c.ConditionKeys = DefaultConditionKeys
	}
	if c.DefaultCondition == "" {
		c.DefaultCondition = "production"
	}
	if c.Bucket == "" {
		c.Bucket = BucketDay
	}
	if c.MaxValueBytes <= 0 {
		c.MaxValueBytes = 256 << 10
	}
	return c
}
