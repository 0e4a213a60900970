package warehouse_test

import (
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dittolab/ditto/internal/warehouse"
	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

// TestOpenRefusesOldRunFolds: a database whose run_folds predates the run statuses and input
// keys (written by an older ditto) is refused with ErrOldSchema naming the rebuild, rather
// than opened and failing at the first fold it writes.
func TestOpenRefusesOldRunFolds(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.duckdb")
	db, err := sql.Open("duckdb", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE run_folds (study VARCHAR NOT NULL, run VARCHAR NOT NULL, attempt INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	w, err := warehouse.Open(warehousetest.Context(t, 30*time.Second), warehouse.Config{Path: path})
	if err == nil {
		w.Close()
	}
	if !errors.Is(err, warehouse.ErrOldSchema) || !strings.Contains(err.Error(), "analyzer rebuild") {
		t.Errorf("Open = %v, want ErrOldSchema naming analyzer rebuild", err)
	}
}
