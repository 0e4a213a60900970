package console

import (
	"net/http"

	"github.com/dittolab/ditto/internal/queryapi"
)

type sqlView struct {
	Tables []queryapi.SchemaTable
	Query  string
}

// sqlPage is the SQL editor: the public tables and columns as GET /v1/schema lists them
// (internal tables are not among them), and a form whose queries and downloads go to
// GET /v1/sql (assets/console.js).
func (c *Console) sqlPage(w http.ResponseWriter, r *http.Request) error {
	tables, err := queryapi.ReadSchema(r.Context(), c.db, c.cfg.Public)
	if err != nil {
		return err
	}
	q := r.URL.Query().Get("q")
	if q == "" {
		q = "SELECT study, status, count(*) AS runs\nFROM runs\nWHERE last_attempt\nGROUP BY ALL\nORDER BY ALL"
	}
	c.render(w, r, "sql", http.StatusOK, pageData{Title: "SQL", Nav: "sql", Data: sqlView{Tables: tables, Query: q}})
	return nil
}
