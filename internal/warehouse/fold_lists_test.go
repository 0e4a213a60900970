package warehouse

import (
	"database/sql"
	"reflect"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2"
)

// TestJSONStringsRoundTrip: a list as run_fold_rows stores it (jsonStrings) reads back through
// the view run_folds' from_json as the same VARCHAR[], whatever its strings hold (quotes,
// backslashes, control characters, non-ASCII, JSON-like text, empty strings), and the empty
// list as an empty one; invalid UTF-8, which a VARCHAR cannot hold, reads back with U+FFFD.
func TestJSONStringsRoundTrip(t *testing.T) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	cases := []struct{ in, want []string }{
		{nil, []string{}},
		{[]string{}, []string{}},
		{[]string{""}, []string{""}},
		{[]string{"plan", "act", "plan"}, []string{"plan", "act", "plan"}},
		{[]string{`a"b`, `c\d`, "e\nf\tg\rh", "\x00\x01\x1f\x7f", "é€𝄞", `["x","y"]`, "a,b", "</script>"},
			[]string{`a"b`, `c\d`, "e\nf\tg\rh", "\x00\x01\x1f\x7f", "é€𝄞", `["x","y"]`, "a,b", "</script>"}},
		{[]string{"ok\xff\xfe", "\xc3"}, []string{"ok\uFFFD", "\uFFFD"}},
	}
	for _, c := range cases {
		text := jsonStrings(c.in)
		var got []any
		if err := db.QueryRow(`SELECT from_json($1, '["VARCHAR"]')`, text).Scan(&got); err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		gs := make([]string, len(got))
		for i, v := range got {
			gs[i] = v.(string)
		}
		if !reflect.DeepEqual(gs, c.want) {
			t.Errorf("%q read back as %q, want %q", text, gs, c.want)
		}
	}
}
