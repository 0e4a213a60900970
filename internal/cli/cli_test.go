package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// testConfig is what the test program's "run" command parsed.
type testConfig struct {
	dir      string
	url      string
	password string
	n        int
	wait     time.Duration
	tokens   []string
	verbose  bool
	args     []string
}

// testProgram returns a program with a command that records what it parsed, a group of two
// commands, and commands that fail in each way.
func testProgram(got *testConfig) Program {
	run := func(_ context.Context, fs *flag.FlagSet, args []string) error {
		String(fs, &got.dir, "data-dir", "CLITEST_DATA_DIR", "data", "data directory")
		URL(fs, &got.url, "url", "CLITEST_URL", "", "server URL")
		Secret(fs, &got.password, "password", "CLITEST_PASSWORD", "password")
		Int(fs, &got.n, "n", "CLITEST_N", 3, "how many")
		Duration(fs, &got.wait, "wait", "CLITEST_WAIT", time.Minute, "how long")
		SecretList(fs, "token", "CLITEST_TOKENS", "token as SECRET=scope; repeatable", func(s string) error {
			if !strings.Contains(s, "=") {
				return fmt.Errorf("token %q: want SECRET=scope", s)
			}
			got.tokens = append(got.tokens, s)
			return nil
		})
		fs.BoolVar(&got.verbose, "v", false, "verbose")
		if err := Parse(fs, args); err != nil {
			return err
		}
		got.args = fs.Args()
		if fs.NArg() > 2 {
			return fmt.Errorf("%w: at most two arguments", ErrUsage)
		}
		return nil
	}
	plain := func(err error) func(context.Context, *flag.FlagSet, []string) error {
		return func(_ context.Context, fs *flag.FlagSet, args []string) error {
			if perr := Parse(fs, args); perr != nil {
				return perr
			}
			return err
		}
	}
	return Program{Name: "prog", Summary: "a test program", Commands: []Command{
		{Name: "run", Usage: "[flags] [A [B]]", Summary: "records its flags", Run: run},
		{Name: "fail", Summary: "fails", Run: plain(errors.New("it broke"))},
		{Name: "reject", Summary: "exits 3", Run: plain(&ExitError{Code: 3, Err: errors.New("3 lines rejected")})},
		{Name: "job submit", Usage: "[flags] SPEC", Summary: "submits", Run: plain(fmt.Errorf("%w: name a SPEC", ErrUsage))},
		{Name: "job status", Summary: "shows status", Run: plain(nil)},
	}}
}

type result struct {
	code           int
	stdout, stderr string
}

func runProgram(args ...string) (result, testConfig) {
	var got testConfig
	var out, errOut bytes.Buffer
	code := testProgram(&got).Run(context.Background(), args, &out, &errOut)
	return result{code, out.String(), errOut.String()}, got
}

func TestRunExitStatuses(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{"no command", nil, 2, "", "usage: prog <command>"},
		{"help", []string{"--help"}, 0, "exit status: 0 done, 1 failed, 2 usage error", ""},
		{"help word", []string{"help"}, 0, "job submit", ""},
		{"help of a command", []string{"help", "job", "submit"}, 0, "usage: prog job submit [flags] SPEC", ""},
		{"help of an unknown command", []string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{"version", []string{"--version"}, 0, "prog ", ""},
		{"unknown command", []string{"nope"}, 2, "", `prog: unknown command "nope"`},
		{"ok", []string{"run"}, 0, "", ""},
		{"failure", []string{"fail"}, 1, "", "prog fail: it broke\n"},
		{"exit error", []string{"reject"}, 3, "", "prog reject: 3 lines rejected\n"},
		{"unknown flag", []string{"run", "--nope"}, 2, "", "prog run: flag provided but not defined: -nope\nusage: prog run [flags] [A [B]]\n"},
		{"command help", []string{"run", "-h"}, 0, "usage: prog run [flags] [A [B]]", ""},
		{"command help after an argument", []string{"run", "a", "--help"}, 0, "records its flags", ""},
		{"usage error of a group command", []string{"job", "submit"}, 2, "", "prog job submit: name a SPEC\nusage: prog job submit [flags] SPEC\n"},
		{"group alone", []string{"job"}, 2, "", "prog job: name one of its commands"},
		{"group help", []string{"job", "--help"}, 0, "usage: prog job <command>", ""},
		{"unknown command of a group", []string{"job", "launch"}, 2, "", `unknown command "job launch"`},
		{"group command", []string{"job", "status"}, 0, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := runProgram(tt.args...)
			if got.code != tt.wantCode || !strings.Contains(got.stdout, tt.wantStdout) || !strings.Contains(got.stderr, tt.wantStderr) {
				t.Errorf("Run(%q) = %d, stdout %q, stderr %q; want %d, stdout with %q, stderr with %q",
					tt.args, got.code, got.stdout, got.stderr, tt.wantCode, tt.wantStdout, tt.wantStderr)
			}
			if tt.wantStdout == "" && got.stdout != "" {
				t.Errorf("Run(%q) wrote %q to stdout, want nothing", tt.args, got.stdout)
			}
		})
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name     string
		env      map[string]string
		args     []string
		wantDir  string
		wantN    int
		wantWait time.Duration
		wantArgs []string
		wantTok  []string
	}{
		{name: "defaults", wantDir: "data", wantN: 3, wantWait: time.Minute},
		{name: "flags after the arguments", args: []string{"a", "--data-dir", "x", "b", "--n", "5"},
			wantDir: "x", wantN: 5, wantWait: time.Minute, wantArgs: []string{"a", "b"}},
		{name: "-- ends the flags", args: []string{"--n", "4", "--", "--data-dir", "-"},
			wantDir: "data", wantN: 4, wantWait: time.Minute, wantArgs: []string{"--data-dir", "-"}},
		{name: "environment", env: map[string]string{"CLITEST_DATA_DIR": "/srv", "CLITEST_N": "7", "CLITEST_WAIT": "2s", "CLITEST_TOKENS": "s1=a  s2=b"},
			wantDir: "/srv", wantN: 7, wantWait: 2 * time.Second, wantTok: []string{"s1=a", "s2=b"}},
		{name: "the command line over the environment", env: map[string]string{"CLITEST_N": "7", "CLITEST_TOKENS": "s1=a"},
			args: []string{"--n", "8", "--token", "s3=c"}, wantDir: "data", wantN: 8, wantWait: time.Minute, wantTok: []string{"s3=c"}},
		{name: "an empty variable is unset", env: map[string]string{"CLITEST_DATA_DIR": ""}, wantDir: "data", wantN: 3, wantWait: time.Minute},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			res, got := runProgram(append([]string{"run"}, tt.args...)...)
			if res.code != 0 {
				t.Fatalf("Run(%q) = %d: %s", tt.args, res.code, res.stderr)
			}
			if got.dir != tt.wantDir || got.n != tt.wantN || got.wait != tt.wantWait ||
				fmt.Sprint(got.args) != fmt.Sprint(tt.wantArgs) || fmt.Sprint(got.tokens) != fmt.Sprint(tt.wantTok) {
				t.Errorf("Run(%q) parsed dir %q, n %d, wait %v, args %q, tokens %q; want %q, %d, %v, %q, %q",
					tt.args, got.dir, got.n, got.wait, got.args, got.tokens, tt.wantDir, tt.wantN, tt.wantWait, tt.wantArgs, tt.wantTok)
			}
		})
	}
}

func TestParseBadEnvironment(t *testing.T) {
	t.Setenv("CLITEST_N", "many")
	res, _ := runProgram("run")
	if res.code != 2 || !strings.Contains(res.stderr, `environment variable CLITEST_N="many" (for --n): not an integer`) {
		t.Errorf("Run with CLITEST_N=many = %d, %q; want 2 and an error naming the variable", res.code, res.stderr)
	}
}

// TestSecretsNotShown: a secret given by environment or flag, and a URL's password, appear in
// no help and no error, even when the value is refused.
func TestSecretsNotShown(t *testing.T) {
	const pw, tok, urlPW = "pw-Zq81hTx", "tok-9Hs2mXa", "upw-44kLmq"
	t.Setenv("CLITEST_PASSWORD", pw)
	t.Setenv("CLITEST_URL", "nats://user:"+urlPW+"@example.net:4222,nats://"+urlPW+"@other:4222")
	for _, args := range [][]string{
		{"run", "--help"},
		{"help", "run"},
		{"run", "--nope"},
		{"run", "a", "b", "c"},
		{"run", "--password", pw, "--nope"},
		{"run", "--token", tok, "--n", "1"},         // refused: no '='
		{"run", "--url", "nats://u:" + urlPW + "@"}, // not refused by the flag, shown nowhere
	} {
		res, _ := runProgram(args...)
		all := res.stdout + res.stderr
		for _, secret := range []string{pw, tok, urlPW} {
			if strings.Contains(all, secret) {
				t.Errorf("Run(%q) printed the secret %q:\n%s", args, secret, all)
			}
		}
	}
	res, _ := runProgram("run", "--help")
	for _, want := range []string{
		"[env CLITEST_PASSWORD: set, value not shown]",
		"[env CLITEST_TOKENS: not set]",
		`[env CLITEST_URL="nats://xxxxx@example.net:4222,nats://xxxxx@other:4222"]`,
		`(default "data") [env CLITEST_DATA_DIR]`,
	} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("help lacks %q:\n%s", want, res.stdout)
		}
	}
	res, _ = runProgram("run", "--token", tok)
	if res.code != 2 || !strings.Contains(res.stderr, "--token: token \"…\": want SECRET=scope (the value is not shown)") {
		t.Errorf("refused token: %d, %q", res.code, res.stderr)
	}
	t.Setenv("CLITEST_TOKENS", tok)
	res, _ = runProgram("run")
	if res.code != 2 || !strings.Contains(res.stderr, "environment variable CLITEST_TOKENS (for --token)") || strings.Contains(res.stderr, tok) {
		t.Errorf("refused token from the environment: %d, %q", res.code, res.stderr)
	}
}

func TestRedactURLs(t *testing.T) {
	tests := []struct{ give, want string }{
		{"", ""},
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://u:p@h:4222", "nats://xxxxx@h:4222"},
		{"nats://tok@h:4222, nats://h2:4222", "nats://xxxxx@h:4222,nats://h2:4222"},
		{"https://h/hook?key=abc", "https://h/hook?xxxxx"},
		{"u:p@", "(not shown: not a URL, and it may hold a credential)"},
	}
	for _, tt := range tests {
		if got := RedactURLs(tt.give); got != tt.want {
			t.Errorf("RedactURLs(%q) = %q, want %q", tt.give, got, tt.want)
		}
	}
}

func TestFormatVersion(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v0.0.0-20261130120000-4ad115b7c2e1+dirty"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "4ad115b7c2e1f00d"}, {Key: "vcs.time", Value: "2026-11-30T12:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name     string
		override string
		bi       *debug.BuildInfo
		want     string
	}{
		{"stamped", "", stamped, "v0.0.0-20261130120000-4ad115b7c2e1+dirty (commit 4ad115b7c2e1, 2026-11-30T12:00:00Z, dirty, go1.26.0, "},
		{"set by the build", "v1.2.3", stamped, "v1.2.3 (commit 4ad115b7c2e1, 2026-11-30T12:00:00Z, dirty, go1.26.0, "},
		{"no stamp", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, "devel (go1.26.0, "},
		{"clean tree", "", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.0.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "false"}}}, "v1.0.0 (commit abc, go1.26.0, "},
	}
	for _, tt := range tests {
		if got := formatVersion(tt.override, tt.bi); !strings.HasPrefix(got, tt.want) {
			t.Errorf("%s: formatVersion() = %q, want it to start with %q", tt.name, got, tt.want)
		}
	}
}
