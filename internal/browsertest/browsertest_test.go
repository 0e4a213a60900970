package browsertest_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/browsertest"
)

// TestLaunch installs playwright-core (unless it is there), launches Chromium through
// launch.mjs and reads a local page: its heading and its table's cells.
func TestLaunch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pw := browsertest.Setup(t, ctx)
	page, err := filepath.Abs(filepath.Join("testdata", "smoke.html"))
	if err != nil {
		t.Fatal(err)
	}
	pw.Run(t, ctx, filepath.Join("testdata", "smoke.mjs"), "SMOKE_HTML="+page)
}
