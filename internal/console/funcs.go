package console

import (
	"html/template"
	"net/url"
	"strings"
)

var funcs = template.FuncMap{
	"pathEsc":    pathEsc,
	"joinLeaves": joinLeaves,
	"join":       strings.Join,
	"inc":        func(i int) int { return i + 1 },
	"dec":        func(i int) int { return i - 1 },
}

func pathEsc(s string) string { return url.PathEscape(s) }
