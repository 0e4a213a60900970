package cli

import (
	"runtime"
	"runtime/debug"
	"strings"
)

// version, when set by the build, is the version --version prints instead of the module's:
//
//	go build -ldflags "-X github.com/dittolab/ditto/internal/cli.version=v1.2.3" ./cmd/analyzer
//
// The Makefile's build target sets it to `git describe --tags --always --dirty`.
var version string

// Version describes the running binary: its version (set by the build, else the module
// version Go stamped, "devel" without one), then the commit, its time and whether the tree
// had uncommitted changes when the toolchain recorded them, and the Go version.
func Version() string {
	bi, _ := debug.ReadBuildInfo()
	return formatVersion(version, bi)
}

func formatVersion(override string, bi *debug.BuildInfo) string {
	v, goVersion := override, runtime.Version()
	var revision, at string
	dirty := false
	if bi != nil {
		if v == "" {
			v = bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var details []string
	if revision != "" {
		details = append(details, "commit "+revision[:min(len(revision), 12)])
	}
	if at != "" {
		details = append(details, at)
	}
	if dirty {
		details = append(details, "dirty")
	}
	details = append(details, goVersion, runtime.GOOS+"/"+runtime.GOARCH)
	return v + " (" + strings.Join(details, ", ") + ")"
}
