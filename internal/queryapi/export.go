package queryapi

import (
	"archive/tar"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Export layout under the target directory:
//
//	<table>/study=<study>/data_0.parquet   tables and views with a study column (Hive partitions)
//	<table>.parquet                        the others (rejected_events, ingest_state), and empty tables
//	manifest.json                          ExportManifest: tables, row counts, time
//
// Partitioned files also keep the study column inside the file (WRITE_PARTITION_COLUMNS), so a
// reader that knows nothing of Hive partitioning still sees it.

// ManifestName is the manifest file of an export.
const ManifestName = "manifest.json"

// ExportManifest describes an export.
type ExportManifest struct {
	ExportedAt time.Time       `json:"exported_at"`
	Tables     []ExportedTable `json:"tables"`
}

// ExportedTable is one exported table or view.
type ExportedTable struct {
	Name        string `json:"name"`
	Rows        int64  `json:"rows"`
	PartitionBy string `json:"partition_by,omitempty"` // "study", or empty for a single file
	Path        string `json:"path"`                   // relative to the export directory
}

// Export writes tables (tables or views of db's main schema; missing ones are skipped) to dir
// as Parquet, all from one snapshot of the database, and writes the manifest. dir must be
// writable by DuckDB: on a hardened database, inside one of its allowed directories.
func Export(ctx context.Context, db *sql.DB, dir string, tables []string) (*ExportManifest, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	defer conn.Close()
	// One transaction: every table comes from the same snapshot while ingestion goes on.
	if _, err := conn.ExecContext(ctx, "BEGIN TRANSACTION"); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	defer func() {
		if _, err := conn.ExecContext(context.Background(), "ROLLBACK"); err != nil {
			// Not back to the pool inside the transaction: it would hold this snapshot, and
			// the ingester's reattach would wait for it (warehouse, gate.go).
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()

	m := &ExportManifest{ExportedAt: time.Now().UTC(), Tables: []ExportedTable{}}
	for _, t := range tables {
		cols, err := columnsOf(ctx, conn, t)
		if err != nil {
			return nil, err
		}
		if len(cols) == 0 {
			continue // not in this database
		}
		et := ExportedTable{Name: t}
		if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM "+ident(t)).Scan(&et.Rows); err != nil {
			return nil, fmt.Errorf("%w: count %s: %v", ErrExport, t, err)
		}
		var copySQL string
		if cols["study"] && et.Rows > 0 {
			et.PartitionBy, et.Path = "study", t
			target := filepath.Join(abs, t)
			if err := os.MkdirAll(target, 0o755); err != nil {
				return nil, fmt.Errorf("%w: %v", ErrExport, err)
			}
			copySQL = fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (FORMAT parquet, PARTITION_BY (study), WRITE_PARTITION_COLUMNS true, OVERWRITE_OR_IGNORE true)",
				ident(t), literal(target))
		} else {
			// An empty table has no partitions; one file keeps its schema readable.
			et.Path = t + ".parquet"
			copySQL = fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (FORMAT parquet)", ident(t), literal(filepath.Join(abs, et.Path)))
		}
		if _, err := conn.ExecContext(ctx, copySQL); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrExport, t, err)
		}
		m.Tables = append(m.Tables, et)
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	if err := os.WriteFile(filepath.Join(abs, ManifestName), append(b, '\n'), 0o644); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrExport, err)
	}
	return m, nil
}

// columnsOf returns the column names of a table or view of the main schema (none if it does
// not exist).
func columnsOf(ctx context.Context, conn *sql.Conn, table string) (map[string]bool, error) {
	rows, err := conn.QueryContext(ctx,
		`SELECT column_name FROM duckdb_columns()
		 WHERE database_name = current_database() AND schema_name = 'main' AND table_name = $1`, table)
	if err != nil {
		return nil, fmt.Errorf("%w: columns of %s: %v", ErrExport, table, err)
	}
	defer rows.Close()
	cols := map[string]bool{}
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrExport, err)
		}
		cols[c] = true
	}
	return cols, rows.Err()
}

func ident(s string) string   { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
func literal(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// WriteTar writes the files under dir to w as a tar archive with relative, slash-separated
// names.
func WriteTar(w io.Writer, dir string) error {
	tw := tar.NewWriter(w)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil || rel == "." {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if d.IsDir() {
			hdr.Name += "/"
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
	if err != nil {
		return fmt.Errorf("%w: tar: %v", ErrExport, err)
	}
	return tw.Close()
}

// ExtractTar unpacks a tar archive made by WriteTar into dir. Names that would leave dir
// (absolute, or with ..) and anything but files and directories are refused.
func ExtractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: untar: %v", ErrExport, err)
		}
		name := filepath.FromSlash(strings.TrimSuffix(hdr.Name, "/"))
		if !filepath.IsLocal(name) {
			return fmt.Errorf("%w: untar: unsafe name %q", ErrExport, hdr.Name)
		}
		target := filepath.Join(dir, name)
		switch hdr.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return fmt.Errorf("%w: %v", ErrExport, err)
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return fmt.Errorf("%w: %v", ErrExport, err)
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrExport, err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("%w: %v", ErrExport, err)
			}
		default:
			return fmt.Errorf("%w: untar: %q is not a file or directory", ErrExport, hdr.Name)
		}
	}
}

func readFile(dir, name string) ([]byte, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w in %s", errNoManifest, dir)
	}
	return b, err
}
