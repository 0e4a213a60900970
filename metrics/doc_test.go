package metrics_test

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// TestDocExamples: every worked example of docs/metrics.md shows what the
// package computes. A changed formula, a changed example or a number edited
// in the document by hand fails here, with the block the document should
// hold.
func TestDocExamples(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := checkedBlocks(string(b))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for name := range docExamples {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		var got bytes.Buffer
		if err := docExamples[name](&got); err != nil {
			t.Errorf("example %q: %v", name, err)
			continue
		}
		want, ok := blocks[name]
		if !ok {
			t.Errorf("%s has no block checked as %q; it would hold:\n%s", docPath, name, got.String())
			continue
		}
		if got.String() != want {
			t.Errorf("%s, block %q:\n%s\nthe package computes:\n%s", docPath, name, want, got.String())
		}
	}
	for name := range blocks {
		if _, ok := docExamples[name]; !ok {
			t.Errorf("%s checks a block as %q, but no example of that name exists", docPath, name)
		}
	}
}

// TestDocProseNumbers: the prose around the examples quotes their results
// ("RR = 0.333 while DI is 1.000"). Every decimal number in the prose must
// be a result printed in some checked block, to the precision quoted, so a
// changed example cannot leave stale figures in the explanation. Inline
// code (JSON samples) and library versions are not results.
func TestDocProseNumbers(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	var results []string
	for name, f := range docExamples {
		var out bytes.Buffer
		if err := f(&out); err != nil {
			t.Fatalf("example %q: %v", name, err)
		}
		results = append(results, decimal.FindAllString(out.String(), -1)...)
	}
	prose := fenced.ReplaceAllString(string(b), "")
	prose = inlineCode.ReplaceAllString(prose, "")
	prose = version.ReplaceAllString(prose, "")
	quoted := decimal.FindAllString(prose, -1)
	if len(quoted) < 20 {
		t.Fatalf("found %d decimal numbers in the prose of %s; the extraction is broken", len(quoted), docPath)
	}
	for _, q := range quoted {
		if !slices.ContainsFunc(results, func(r string) bool { return quotes(q, r) }) {
			t.Errorf("%s quotes %s, which no checked example prints", docPath, q)
		}
	}
}

var (
	decimal    = regexp.MustCompile(`-?\d+\.\d+`)
	fenced     = regexp.MustCompile("(?s)```.*?```")
	inlineCode = regexp.MustCompile("`[^`\n]*`")
	version    = regexp.MustCompile(`(SciPy|statsmodels) \d+\.\d+`)
)

// quotes reports whether q is r rounded to q's number of decimals.
func quotes(q, r string) bool {
	qd := len(q) - strings.IndexByte(q, '.') - 1
	rd := len(r) - strings.IndexByte(r, '.') - 1
	if qd > rd {
		return false
	}
	qv, err1 := strconv.ParseFloat(q, 64)
	rv, err2 := strconv.ParseFloat(r, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	return strconv.FormatFloat(rv, 'f', qd, 64) == strconv.FormatFloat(qv, 'f', qd, 64)
}

// TestDocLinks: every link of docs/metrics.md to one of its own sections
// names a heading (as GitHub forms the anchor), and every relative link
// names a file of the repository.
func TestDocLinks(t *testing.T) {
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := fenced.ReplaceAllString(string(b), "")
	anchors := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(doc, -1) {
		anchors[slug(m[1])] = true
	}
	links := link.FindAllStringSubmatch(doc, -1)
	if len(links) < 10 {
		t.Fatalf("found %d links in %s; the extraction is broken", len(links), docPath)
	}
	for _, m := range links {
		target := m[1]
		if a, ok := strings.CutPrefix(target, "#"); ok {
			if !anchors[a] {
				t.Errorf("%s links to #%s, which is no heading", docPath, a)
			}
			continue
		}
		if strings.Contains(target, "://") {
			continue
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(docPath), target)); err != nil {
			t.Errorf("%s links to %s: %v", docPath, target, err)
		}
	}
}

var (
	heading = regexp.MustCompile(`(?m)^#{1,6} (.+)$`)
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
)

// slug is GitHub's anchor for a heading: lower case, punctuation dropped,
// spaces as hyphens.
func slug(h string) string {
	var sb strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			sb.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			sb.WriteRune(r)
		}
	}
	return sb.String()
}
