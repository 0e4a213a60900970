package analysis

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/dittolab/ditto/internal/queryapi"
	"github.com/dittolab/ditto/queries"
)

// APIRowLimit is the row limit APIQuerier asks for; the server caps it (sqlguard's RowsCap,
// 1,000,000 by default) and a truncated answer is ErrTooLarge.
const APIRowLimit = 1_000_000

// APIQuerier runs the read statements through a serving analyzer's HTTP API (POST /v1/sql),
// for when another process holds the database file. The API takes no parameters, so they are
// inlined as SQL literals; it has no snapshot across requests, which ComputeFrom handles by
// retrying a load that changed underneath it. It cannot write: Store needs the file.
func APIQuerier(c *queryapi.Client) Querier { return apiQuerier{c} }

type apiQuerier struct{ c *queryapi.Client }

func (a apiQuerier) Query(ctx context.Context, s queries.Statement, args []any, fn func([]any) error) error {
	text, err := Inline(s.SQL, args)
	if err != nil {
		return fmt.Errorf("analysis: %s: %w", s.Name, err)
	}
	t, err := a.c.Query(ctx, queryapi.SQLRequest{SQL: text, Limit: APIRowLimit})
	if err != nil {
		return fmt.Errorf("analysis: %s through the analyzer API: %w", s.Name, err)
	}
	if t.Truncated {
		return fmt.Errorf("%w: %s returned more than %d rows; run analyzer metrics where the database file can be opened (stop the serving analyzer, or use --local)",
			ErrTooLarge, s.Name, len(t.Rows))
	}
	for _, r := range t.Rows {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

var placeholder = regexp.MustCompile(`\$([0-9]+)`)

// Inline returns a statement with its header comments and final semicolon removed and its
// $n parameters replaced by SQL literals of args (nil, string, int64, int, bool). The
// statements of package queries hold no '$' or "--" inside string literals.
func Inline(sql string, args []any) (string, error) {
	var b strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "--") {
			continue
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	body := strings.TrimSpace(b.String())
	body = strings.TrimSuffix(body, ";")
	var err error
	body = placeholder.ReplaceAllStringFunc(body, func(m string) string {
		i, _ := strconv.Atoi(m[1:])
		if i < 1 || i > len(args) {
			err = fmt.Errorf("parameter %s without an argument", m)
			return m
		}
		lit, lerr := literal(args[i-1])
		if lerr != nil {
			err = lerr
		}
		return lit
	})
	return body, err
}

func literal(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return "'" + strings.ReplaceAll(x, "'", "''") + "'", nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case int:
		return strconv.Itoa(x), nil
	case bool:
		return strconv.FormatBool(x), nil
	}
	return "", fmt.Errorf("no SQL literal for %T", v)
}
