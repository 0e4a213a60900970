package sqlguard

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dittolab/ditto/internal/duckconn"
	"github.com/dittolab/ditto/queries"
)

// Harden turns off DuckDB's access to anything outside its own database files, for the
// whole database instance behind db: no file or URL reads or writes (enable_external_access),
// no extension auto-install or auto-load, and then lock_configuration, after which no SET
// can change any setting (for any connection, including the analyzer's own). allowedDirs
// stay reachable (DuckDB's allowed_directories) so that the analyzer's own COPY … TO can
// write exports there; users cannot name them (see the package doc, layer 2).
//
// Call it once, after whoever owns db has applied its own settings. It cannot be undone
// while the database is open.
func Harden(ctx context.Context, db *sql.DB, allowedDirs ...string) error {
	var stmts []string
	if len(allowedDirs) > 0 {
		quoted := make([]string, len(allowedDirs))
		for i, d := range allowedDirs {
			abs, err := filepath.Abs(d)
			if err != nil {
				return fmt.Errorf("sqlguard: harden: %w", err)
			}
			// A trailing separator makes the entry a directory prefix, not a file name.
			quoted[i] = quote(strings.TrimSuffix(abs, string(filepath.Separator)) + string(filepath.Separator))
		}
		stmts = append(stmts, "SET GLOBAL allowed_directories = ["+strings.Join(quoted, ", ")+"]")
	}
	stmts = append(stmts,
		"SET GLOBAL autoinstall_known_extensions = false",
		"SET GLOBAL autoload_known_extensions = false",
		"SET GLOBAL enable_external_access = false",
		"SET GLOBAL lock_configuration = true",
	)
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			return fmt.Errorf("sqlguard: harden: %s: %w", s, err)
		}
	}
	return nil
}

// Hardened reports whether Harden has been applied to the database behind db.
func Hardened(ctx context.Context, db *sql.DB) (bool, error) {
	var external, locked bool
	err := db.QueryRowContext(ctx,
		"SELECT current_setting('enable_external_access')::BOOLEAN, current_setting('lock_configuration')::BOOLEAN").
		Scan(&external, &locked)
	if err != nil {
		return false, fmt.Errorf("sqlguard: read settings: %w", err)
	}
	return !external && locked, nil
}

// OpenReadOnly opens the DuckDB file at path read-only (access_mode=READ_ONLY) and
// hardens it with allowedDirs. It fails if the file does not exist, or if another process
// has it open for writing (DuckDB allows one writing process and no readers beside it).
func OpenReadOnly(ctx context.Context, path string, allowedDirs ...string) (*sql.DB, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlguard: open %s: %w", path, err)
	}
	dsn := path + "?access_mode=READ_ONLY"
	// A database an older build wrote, not yet migrated, reads as it is (queries.ReadOnlyInit).
	var init []string
	err := duckconn.With(dsn, func(db *sql.DB) (err error) {
		init, err = queries.ReadOnlyInit(ctx, db)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("sqlguard: open %s read-only: %w", path, err)
	}
	connector, err := duckconn.New(dsn, init...)
	if err != nil {
		return nil, fmt.Errorf("sqlguard: open %s read-only: %w", path, err)
	}
	db := sql.OpenDB(connector)
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlguard: open %s read-only: %w", path, err)
	}
	if err := Harden(ctx, db, allowedDirs...); err != nil {
		_ = db.Close()
		return nil, err
	}
	return db, nil
}

// quote makes s a SQL string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
