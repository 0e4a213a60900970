//go:build duckdb_arrow

// The example answers a query, which only a build with the duckdb_arrow tag can (an example
// cannot skip itself as the tests do with sqlguardtest.NeedsQueries).

package queryapi_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"net/http/httptest"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/dittolab/ditto/internal/queryapi"
)

// A client queries a serving analyzer; numbers arrive exact, as json.Number.
func ExampleClient_Query() {
	db, _ := sql.Open("duckdb", "")
	defer db.Close()
	db.Exec(`CREATE TABLE runs AS SELECT 's1' AS study, unnest(['succeeded', 'succeeded', 'failed']) AS status`)
	srv, _ := queryapi.NewServer(db, queryapi.Config{Token: "t"})
	hs := httptest.NewServer(srv)
	defer hs.Close()
	baseURL, token, ctx := hs.URL, "t", context.Background()

	c := queryapi.NewClient(baseURL, token)
	t, err := c.Query(ctx, queryapi.SQLRequest{
		SQL:    "SELECT status, count(*) AS runs FROM runs WHERE study = $1 GROUP BY ALL ORDER BY ALL",
		Params: []any{"s1"},
	})
	if err != nil {
		log.Fatal(err)
	}
	for _, row := range t.Rows {
		fmt.Println(row[0], row[1])
	}
	// Output:
	// failed 1
	// succeeded 2
}
