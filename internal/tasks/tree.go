package tasks

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"
)

// Bounds of a repository tree read from a directory: it travels, as part of its task file, in
// study.defined and in every job.
const (
	MaxTreeFiles = 1000
	MaxTreeBytes = 192 << 10
)

// readTree reads the Go module at dir for a coding task file: when dir is in a git work tree,
// the files git tracks or would track (not ignored), as they are in the work tree; otherwise
// every regular file under it, .git directories left out. Paths are slash-separated and
// relative to dir. A symbolic link, a file that is not UTF-8 text, or a tree past MaxTreeFiles
// or MaxTreeBytes is refused.
func readTree(dir string) (map[string]string, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", dir)
	}
	paths, err := gitFiles(dir)
	if err != nil {
		paths, err = walkFiles(dir)
	}
	if err != nil {
		return nil, err
	}
	files := map[string]string{}
	total := 0
	for _, p := range paths {
		if len(files) == MaxTreeFiles {
			return nil, fmt.Errorf("%s has more than %d files: a coding task's repository must be a small module", dir, MaxTreeFiles)
		}
		full := filepath.Join(dir, filepath.FromSlash(p))
		lst, err := os.Lstat(full)
		switch {
		case err != nil && os.IsNotExist(err):
			continue // tracked but deleted in the work tree
		case err != nil:
			return nil, err
		case lst.Mode()&fs.ModeSymlink != 0:
			return nil, fmt.Errorf("%s is a symbolic link: a coding task's repository holds regular files only", p)
		case !lst.Mode().IsRegular():
			continue
		}
		b, err := os.ReadFile(full)
		if err != nil {
			return nil, err
		}
		if !utf8.Valid(b) {
			return nil, fmt.Errorf("%s is not UTF-8 text: a coding task's repository holds text files only", p)
		}
		if total += len(b); total > MaxTreeBytes {
			return nil, fmt.Errorf("%s holds more than %d bytes: a coding task's repository must be a small module", dir, MaxTreeBytes)
		}
		files[p] = string(b)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no file", dir)
	}
	return files, nil
}

// gitFiles lists the files git tracks under dir, and the untracked ones it does not ignore.
func gitFiles(dir string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "git", "-C", dir, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("git ls-files: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var paths []string
	seen := map[string]bool{}
	for _, p := range strings.Split(out.String(), "\x00") {
		if p != "" && !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths, nil
}

func walkFiles(dir string) ([]string, error) {
	var paths []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && d.Name() == ".git" {
			return filepath.SkipDir
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		paths = append(paths, filepath.ToSlash(rel))
		return nil
	})
	return paths, err
}
