package tasks

import (
	"path"
	"strings"
)

// InScope reports whether resource lies inside one of the scope prefixes. Both sides are
// cleaned first, so "data/x/../y" is judged as "data/y"; a prefix matches whole path segments
// only ("data/a" covers "data/a" and "data/a/b", never "data/ab"). Absolute paths and paths that
// climb above the root are never in scope.
func InScope(scope []string, resource string) bool {
	if resource == "" || strings.HasPrefix(resource, "/") {
		return false
	}
	r := path.Clean(resource)
	if r == ".." || strings.HasPrefix(r, "../") {
		return false
	}
	for _, p := range scope {
		p = path.Clean(p)
		if r == p || strings.HasPrefix(r, p+"/") {
			return true
		}
	}
	return false
}

// OutOfScope returns the resources that are not InScope, in order.
func OutOfScope(scope, resources []string) []string {
	var out []string
	for _, r := range resources {
		if !InScope(scope, r) {
			out = append(out, r)
		}
	}
	return out
}
