package analysis

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/dittolab/ditto/metrics"
	"github.com/dittolab/ditto/queries"
)

// Store writes a Result into the tables metrics and comparisons (created if missing),
// replacing the study's previous rows in one transaction: readers see the old Result or the
// new one, never a mix. The database must be open read-write.
func Store(ctx context.Context, db *sql.DB, rep *Result) (err error) {
	for _, s := range []queries.Statement{queries.AnalysisTableMetrics, queries.AnalysisTableComparisons, queries.AnalysisAddPSE} {
		if _, err := db.ExecContext(ctx, s.SQL); err != nil {
			return fmt.Errorf("analysis: %s: %w", s.Name, err)
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("analysis: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	study := rep.Study.ID
	for _, s := range []queries.Statement{queries.AnalysisDeleteMetrics, queries.AnalysisDeleteComparisons} {
		if _, err := tx.ExecContext(ctx, s.SQL, study); err != nil {
			return fmt.Errorf("analysis: %s: %w", s.Name, err)
		}
	}
	insM, err := tx.PrepareContext(ctx, queries.AnalysisInsertMetric.SQL)
	if err != nil {
		return fmt.Errorf("analysis: prepare %s: %w", queries.AnalysisInsertMetric.Name, err)
	}
	defer insM.Close()
	for _, c := range rep.Cells {
		rows, err := MetricRows(c.Metrics)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if _, err := insM.ExecContext(ctx, study, c.Task, c.Model, c.Condition, int64(c.Metrics.N),
				r.Metric, r.Value.Ptr(), r.SE.Ptr(), r.Estimated, r.SamplingSE.Ptr()); err != nil {
				return fmt.Errorf("analysis: store metric %s of %s: %w", r.Metric, c.CellKey, err)
			}
		}
	}
	insC, err := tx.PrepareContext(ctx, queries.AnalysisInsertComparison.SQL)
	if err != nil {
		return fmt.Errorf("analysis: prepare %s: %w", queries.AnalysisInsertComparison.Name, err)
	}
	defer insC.Close()
	for _, c := range rep.Comparisons {
		if _, err := insC.ExecContext(ctx, study, c.Task, c.Model, c.ConditionA, c.ConditionB, c.Quantity, c.Test,
			nullIfEmpty(c.Method), int64(c.NA), int64(c.NB), c.ValueA.Ptr(), c.ValueB.Ptr(), c.Difference.Ptr(),
			c.Statistic.Ptr(), c.EffectSize.Ptr(), c.P.Ptr(), c.PAdjusted.Ptr(), c.Significant,
			nullIfEmpty(c.Note), nullIfEmpty(c.Reason), c.PSE.Ptr()); err != nil {
			return fmt.Errorf("analysis: store comparison %s %s: %w", c.Quantity, c.CellB, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("analysis: commit: %w", err)
	}
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// MetricRow is one metric of a cell as the metrics table holds it.
type MetricRow struct {
	// Metric is the field's JSON name in CellMetrics, nested names joined by '.', list items
	// by their k (pass_k) or index (divergence): rr, di_tools, success.rate, pass_k.2,
	// latency_ms.p95, harness.retries_per_run, divergence.0.
	Metric     string
	Value      metrics.Value
	SE         metrics.Value
	Estimated  bool
	SamplingSE metrics.Value
}

// MetricRows flattens a cell's metrics into rows, ordered by name (lists by position). It
// walks CellMetrics' JSON form, so every field the metrics package reports is stored.
func MetricRows(m metrics.CellMetrics) ([]MetricRow, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("analysis: marshal metrics: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v map[string]any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("analysis: flatten metrics: %w", err)
	}
	delete(v, "n") // a column of its own
	var out []MetricRow
	flatten("", v, &out)
	return out, nil
}

func flatten(name string, v any, out *[]MetricRow) {
	join := func(k string) string {
		if name == "" {
			return k
		}
		return name + "." + k
	}
	switch x := v.(type) {
	case map[string]any:
		if isEstimate(x) {
			*out = append(*out, MetricRow{Metric: name, Value: num(x["value"]), SE: num(x["se"]),
				Estimated: x["estimated"] == true, SamplingSE: num(x["sampling_se"])})
			return
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			flatten(join(k), x[k], out)
		}
	case []any:
		for i, e := range x {
			label := strconv.Itoa(i)
			if obj, ok := e.(map[string]any); ok {
				if k, ok := obj["k"].(json.Number); ok { // pass_k: {k, value}
					label = k.String()
					e = obj["value"]
				}
			}
			flatten(join(label), e, out)
		}
	case bool:
		*out = append(*out, MetricRow{Metric: name, Value: metrics.Some(b2f(x))})
	case nil, json.Number:
		*out = append(*out, MetricRow{Metric: name, Value: num(x)})
	}
	// strings (none today) are not metrics
}

func isEstimate(m map[string]any) bool {
	_, v := m["value"]
	_, se := m["se"]
	_, est := m["estimated"]
	return v && se && est
}

func num(v any) metrics.Value {
	n, ok := v.(json.Number)
	if !ok {
		return metrics.Null
	}
	f, err := n.Float64()
	if err != nil {
		return metrics.Null
	}
	return metrics.Some(f)
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
