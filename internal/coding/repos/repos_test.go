package repos

import "testing"

func TestMatchProtected(t *testing.T) {
	tests := []struct {
		patterns []string
		give     string
		want     bool
	}{
		{DefaultProtected, "clamp_test.go", true},
		{DefaultProtected, "pkg/x/clamp_test.go", true},
		{DefaultProtected, "testdata/golden.txt", true},
		{DefaultProtected, "pkg/testdata/a/b.json", true},
		{DefaultProtected, "clamp.go", false},
		{DefaultProtected, "testdata.go", false},
		{[]string{"fixtures/"}, "fixtures/a.json", true},
		{[]string{"internal/golden/"}, "internal/golden/x", true},
		{[]string{"internal/golden/"}, "other/internal/golden/x", false},
		{[]string{"spec/*.md"}, "spec/api.md", true},
		{[]string{"spec/*.md"}, "docs/spec/api.md", false},
		{[]string{"*.golden"}, "a/b/c.golden", true},
		{[]string{"*.golden"}, "clamp_test.go", false},
	}
	for _, tt := range tests {
		if got := MatchProtected(tt.patterns, tt.give); got != tt.want {
			t.Errorf("MatchProtected(%q, %q) = %v, want %v", tt.patterns, tt.give, got, tt.want)
		}
	}
}

func TestFromTree(t *testing.T) {
	files := map[string]string{"go.mod": "module m\n", "a.go": "package m\n\nfunc A() int { return 1 }\n", "a_test.go": "package m\n"}
	cands := []Candidate{{ID: "fix", Kind: KindFix, Edits: []Edit{{Path: "a.go", Old: "return 1", New: "return 2"}}}}
	in, err := FromTree("m", "one", "", "make A return 2", files, cands, nil)
	if err != nil {
		t.Fatal(err)
	}
	if in.Locus != (Locus{File: "a.go", Line: 3}) || in.Digest == "" {
		t.Errorf("FromTree: locus %+v, digest %q; want a.go:3 and a digest", in.Locus, in.Digest)
	}
	other, _ := FromTree("m", "one", "", "p", map[string]string{"go.mod": "module m\n", "a.go": "package m\n"}, nil, nil)
	if other == nil || other.Digest == in.Digest {
		t.Error("two trees have the same digest")
	}
	for _, tt := range []struct {
		name  string
		files map[string]string
		cands []Candidate
	}{
		{"no go.mod", map[string]string{"a.go": "package m\n"}, nil},
		{"path out", map[string]string{"go.mod": "module m\n", "../a.go": "x"}, nil},
		{"edit not found", files, []Candidate{{ID: "x", Kind: KindFix, Edits: []Edit{{Path: "a.go", Old: "return 3", New: "return 2"}}}}},
		{"no fix", files, []Candidate{{ID: "x", Kind: KindSymptom, Edits: []Edit{{Path: "a.go", Old: "return 1", New: "return 2"}}}}},
		{"fix edits a test", files, []Candidate{{ID: "x", Kind: KindFix, Edits: []Edit{{Path: "a_test.go", Old: "package m", New: "package m "}}}}},
	} {
		if _, err := FromTree("m", "one", "", "p", tt.files, tt.cands, nil); err == nil {
			t.Errorf("FromTree(%s) = nil error", tt.name)
		}
	}
}
