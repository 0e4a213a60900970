package analysis

import (
	"database/sql"
	"testing"
	"time"
)

func mustCompute(t *testing.T, db *sql.DB, study string) *Report {
	t.Helper()
	rep, err := Compute(ctxT(t, 60*time.Second), db, study, testOpts)
	if err != nil {
		t.Fatalf("Compute(%q) = %v", study, err)
	}
	return rep
}
