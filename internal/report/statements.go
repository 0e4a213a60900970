package report

import (
	"embed"

	"github.com/dittolab/ditto/queries"
)

//go:embed sql/*.sql
var sqlFiles embed.FS

func statement(name string) queries.Statement {
	b, err := sqlFiles.ReadFile("sql/" + name + ".sql")
	if err != nil {
		panic("report: " + err.Error()) // a missing embedded file is a build error
	}
	return queries.Statement{Name: name, Kind: queries.Analysis, SQL: string(b)}
}

// The report's statements (see each file's header).
var (
	stmtBasis       = statement("report_basis")
	stmtCells       = statement("report_cells")
	stmtStudies     = statement("report_studies")
	stmtWindowCells = statement("report_window_cells")
)
