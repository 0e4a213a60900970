package workspace_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dittolab/ditto/internal/coding/repos"
	"github.com/dittolab/ditto/internal/coding/workspace"
)

func instance(t *testing.T) *repos.Instance {
	t.Helper()
	in, err := repos.Get("inventory", "nil-map")
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func open(t *testing.T, cfg workspace.Config) *workspace.Manager {
	t.Helper()
	if cfg.Root == "" {
		cfg.Root = t.TempDir()
	}
	m, err := workspace.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// create makes run-1's workspace of instance(t) with a manager of cfg; it is discarded when
// t ends.
func create(t *testing.T, cfg workspace.Config) *workspace.Workspace {
	t.Helper()
	ctx := context.Background()
	ws, err := open(t, cfg).Create(ctx, "run-1", instance(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Discard(ctx) })
	return ws
}

func TestResolveRefusesEscapes(t *testing.T) {
	ws := create(t, workspace.Config{})
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws.Dir, "out")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("stock.go", filepath.Join(ws.Dir, "in.go")); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		give    string
		wantRel string
		wantErr bool
	}{
		{"stock.go", "stock.go", false},
		{"./sub/../stock.go", "stock.go", false},
		{"new/file.go", "new/file.go", false},
		{"in.go", "in.go", false},
		{"../x", "", true},
		{"sub/../../x", "", true},
		{"/etc/passwd", "", true},
		{"~/x", "", true},
		{".git/config", "", true},
		{"out/secret", "", true},
		{"out", "", true},
	} {
		_, rel, err := ws.Resolve(tt.give)
		if (err != nil) != tt.wantErr || rel != tt.wantRel {
			t.Errorf("Resolve(%q) = %q, %v; want %q, error %v", tt.give, rel, err, tt.wantRel, tt.wantErr)
		}
		if err != nil && !errors.Is(err, workspace.ErrEscape) {
			t.Errorf("Resolve(%q) error %v, want ErrEscape", tt.give, err)
		}
	}
}

func TestCheckCommand(t *testing.T) {
	for _, tt := range []struct {
		give    string
		wantErr bool
	}{
		{"go test ./...", false},
		{"cat stock.go > /dev/null", false},
		{"sed -i 's/a/b/' stock.go", false},
		{"cat ../other/x.go", true},
		{"cat /etc/passwd", true},
		{"ls ~", true},
		{"cd .. && ls", true},
		{"echo x>/tmp/y", true},
		{"cat > a.go <<'EOF'\n// a comment naming /etc and ../x\npackage a\nEOF\ngo vet ./...", false},
		{"cat > a.go <<EOF\npackage a\nEOF\ncat /etc/passwd", true},
	} {
		if err := workspace.CheckCommand(tt.give); (err != nil) != tt.wantErr {
			t.Errorf("CheckCommand(%q) = %v, want error %v", tt.give, err, tt.wantErr)
		}
	}
}

func TestExecLimits(t *testing.T) {
	ctx := context.Background()
	ws := create(t, workspace.Config{Timeout: 2 * time.Second, OutputBytes: 100})
	res, err := ws.Bash(ctx, "sleep 30")
	if err != nil || !res.TimedOut || res.ExitCode != -1 {
		t.Errorf("sleep 30 under a 2 s timeout: %+v, %v; want timed out", res, err)
	}
	res, err = ws.Bash(ctx, "yes | head -c 1000")
	if err != nil || !res.Truncated || len(res.Output) != 100 || res.Bytes != 1000 {
		t.Errorf("1000 bytes under a 100-byte cap: kept %d of %d, truncated %v, %v", len(res.Output), res.Bytes, res.Truncated, err)
	}
	res, err = ws.Bash(ctx, "pwd; exit 3")
	if err != nil || res.ExitCode != 3 || strings.TrimSpace(string(res.Output)) != ws.Dir {
		t.Errorf("pwd; exit 3 = %q, exit %d, %v; want the worktree and 3", res.Output, res.ExitCode, err)
	}
}

// TestExecNoNetwork shows that a command cannot reach a listener on the host's loopback when
// the platform gives a network namespace, and can when it is turned off.
func TestExecNoNetwork(t *testing.T) {
	ctx := context.Background()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port)
	for _, noNS := range []bool{false, true} {
		m := open(t, workspace.Config{NoNetNS: noNS})
		ws, err := m.Create(ctx, "run-1", instance(t))
		if err != nil {
			t.Fatal(err)
		}
		res, err := ws.Bash(ctx, probe)
		ws.Discard(ctx)
		if err != nil {
			t.Fatal(err)
		}
		connected := strings.Contains(string(res.Output), "connected")
		iso := m.Isolation()
		t.Logf("isolation: %s", iso)
		if iso.Network == "netns" && connected {
			t.Errorf("under %s the command reached the host's loopback", iso)
		}
		if iso.Network == "host" && !connected {
			t.Errorf("without a namespace the probe failed: %s", res.Output)
		}
		if noNS && iso.Network != "host" {
			t.Errorf("NoNetNS: isolation %s", iso)
		}
	}
}

func TestChangesAndRevert(t *testing.T) {
	ctx := context.Background()
	ws := create(t, workspace.Config{})
	if _, err := ws.Bash(ctx, "echo '// x' >> stock_test.go; echo new > notes.txt; ln -s /etc leak"); err != nil {
		t.Fatal(err)
	}
	cs, err := ws.Changes(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(cs)
	want := fmt.Sprint([]workspace.Change{{Path: "leak", Status: "??", Symlink: "/etc"}, {Path: "notes.txt", Status: "??"}, {Path: "stock_test.go", Status: " M"}})
	if got != want {
		t.Fatalf("Changes = %s, want %s", got, want)
	}
	if err := ws.Revert(ctx, "stock_test.go", "notes.txt", "leak"); err != nil {
		t.Fatal(err)
	}
	if cs, err := ws.Changes(ctx); err != nil || len(cs) != 0 {
		t.Fatalf("Changes after Revert = %v, %v; want none", cs, err)
	}
}

// TestSweepAfterKill kills a process holding a worktree and shows that the next Open removes
// it, and that the root is refused while the other process holds it.
func TestSweepAfterKill(t *testing.T) {
	if os.Getenv("WORKSPACE_HELPER_ROOT") != "" {
		return
	}
	root := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperHoldWorktree$")
	cmd.Env = append(os.Environ(), "WORKSPACE_HELPER_ROOT="+root)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	ready := false
	for sc.Scan() {
		if sc.Text() == "ready" {
			ready = true
			break
		}
	}
	if !ready {
		cmd.Process.Kill()
		t.Fatal("helper never got its worktree")
	}
	if _, err := workspace.Open(context.Background(), workspace.Config{Root: root}); !errors.Is(err, workspace.ErrRootBusy) {
		t.Errorf("Open while held = %v, want ErrRootBusy", err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if left, _ := os.ReadDir(filepath.Join(root, "wt")); len(left) != 1 {
		t.Fatalf("the killed helper left %d worktrees, want 1 (the test needs one to sweep)", len(left))
	}
	m := open(t, workspace.Config{Root: root})
	if wts, err := m.Worktrees(); err != nil || len(wts) != 0 {
		t.Fatalf("after Open: worktrees %v, %v; want none", wts, err)
	}
	origins, _ := filepath.Glob(filepath.Join(root, "origins", "inventory", "nil-map-*"))
	if len(origins) != 1 {
		t.Fatalf("origins of inventory/nil-map: %v, want one", origins)
	}
	list, err := exec.Command("git", "-C", origins[0], "worktree", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(strings.TrimSpace(string(list)), "\n") + 1; n != 1 {
		t.Errorf("git worktree list after the sweep has %d entries, want only the origin:\n%s", n, list)
	}
}

// TestHelperHoldWorktree is TestSweepAfterKill's other process: it creates a worktree and waits
// to be killed.
func TestHelperHoldWorktree(t *testing.T) {
	root := os.Getenv("WORKSPACE_HELPER_ROOT")
	if root == "" {
		t.Skip("helper process only")
	}
	m, err := workspace.Open(context.Background(), workspace.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Create(context.Background(), "run-killed", instance(t)); err != nil {
		t.Fatal(err)
	}
	fmt.Println("ready")
	time.Sleep(time.Hour)
}
