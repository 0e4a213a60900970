package analysis

import (
	"database/sql"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/warehouse/warehousetest"
)

func mustCompute(t *testing.T, db *sql.DB, study string) *Result {
	t.Helper()
	rep, err := Compute(warehousetest.Context(t, 60*time.Second), db, study, testOpts)
	if err != nil {
		t.Fatalf("Compute(%q) = %v", study, err)
	}
	return rep
}
