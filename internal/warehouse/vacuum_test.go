package warehouse_test

import (
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestCheckpointsDoNotMergeRowGroups stores six transactions of events, each of which
// checkpoints (a threshold of 1KB), and reads the run_folds rows' row groups: each checkpoint's
// rows stay in the row group it wrote. With DuckDB's vacuum tasks (its default) every
// checkpoint merged the small row groups before it into one, rewriting their rows, and the
// table ended with one row group.
func TestCheckpointsDoNotMergeRowGroups(t *testing.T) {
	const txns, size = 6, 2048
	subjects, raws := benchSubjectsRaws(t, txns*size)
	ctx := warehousetest.Context(t, 2*time.Minute)
	w, err := warehouse.Open(ctx, warehouse.Config{Path: tempDB(t), CheckpointThreshold: "1KB"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := warehouse.StoreForBench(ctx, w, subjects, raws, size, 1); err != nil {
		t.Fatal(err)
	}
	var tasks string
	if err := w.DB().QueryRowContext(ctx, "SELECT current_setting('max_vacuum_tasks')::VARCHAR").Scan(&tasks); err != nil {
		t.Fatal(err)
	}
	if tasks != "0" {
		t.Errorf("max_vacuum_tasks = %s, want 0", tasks)
	}
	var groups, rows int
	if err := w.DB().QueryRowContext(ctx, `SELECT count(DISTINCT row_group_id), (SELECT count(*) FROM run_fold_rows)
		FROM pragma_storage_info('run_fold_rows')`).Scan(&groups, &rows); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d run_folds rows in %d row groups after %d checkpointing transactions", rows, groups, txns)
	if rows == 0 {
		t.Fatal("no run_folds rows stored")
	}
	// The first transaction may finish no run; every other one finishes some.
	if groups < txns-1 {
		t.Errorf("%d run_folds rows in %d row groups after %d checkpoints: the checkpoints merged row groups", rows, groups, txns)
	}
}
