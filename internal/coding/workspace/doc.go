// Package workspace gives each coding run an ephemeral git worktree of its instance, runs
// commands inside it under limits, and removes it afterwards.
//
// A Manager owns one root directory (one process per root: Open takes a lock on it). Under the
// root, origins/<repo>/<instance>-<digest> is a git repository holding the instance's defective
// tree (the digest is the tree's, repos.Instance.Digest) as one commit, made once with a fixed author and date so that its hash is the same everywhere;
// wt/<name> are the runs' worktrees of it. Open sweeps every worktree a previous process left
// (a crash, a kill) before anything runs.
//
// Isolation in force, as Manager.Isolation reports it:
//
//   - every command runs with the worktree as its directory, a cleared environment (PATH, a
//     HOME and TMPDIR under the root, the shared Go build cache, GOPROXY=off, GOFLAGS=-mod=mod,
//     GOTOOLCHAIN=local), a wall-clock timeout (the process group is killed), a CPU-time limit
//     per process (prlimit --cpu) and a cap on the output kept;
//   - no network where the platform allows it: the command runs in a new user and network
//     namespace (unshare -rn), which has only a loopback interface that is down; where unshare
//     fails (no user namespaces), commands run in the host's network namespace and Isolation
//     says so and why;
//   - paths given to the file tools are resolved and must stay inside the worktree: absolute
//     paths, ".." and symlinks that lead out are refused (Resolve); bash commands are refused
//     when they name an absolute path outside a few device files, "..", or "~" (CheckCommand),
//     and after each command the tree is checked for symlinks leading out (Changes). This is
//     a lexical and after-the-fact guard, not a filesystem jail: a command that builds such a
//     path at run time is not stopped before it runs.
package workspace
