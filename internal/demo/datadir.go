package demo

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// MarkerFile is the file a demo writes into its data directory first. It is what lets a later
// demo use the directory again, and empty it: a demo deletes nothing it did not create.
const MarkerFile = ".ditto-demo"

const markerText = "This directory was made by ditto's demo (analyzer demo). A later demo empties it\n" +
	"unless --keep is given; delete this file to keep the demo from using the directory.\n"

// prepareDataDir makes dir ready for a demo. A new or empty directory is used; so is one
// holding MarkerFile, emptied first when fresh. Any other directory is refused with
// ErrNotDemoDir, whatever fresh says: a demo neither deletes nor mixes its files with what
// it did not create.
func prepareDataDir(dir string, fresh bool) error {
	ents, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("demo: %w", err)
	case len(ents) > 0 && !isDemoDir(dir):
		return fmt.Errorf("%w: %s is not empty and no demo made it (it has no %s file); the demo empties its "+
			"directory and never deletes what it did not create: give --data-dir a new or empty directory", ErrNotDemoDir, dir, MarkerFile)
	case fresh:
		for _, e := range ents {
			// The marker goes last (it is rewritten below): a directory half emptied is
			// still known as a demo's.
			if e.Name() == MarkerFile {
				continue
			}
			if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
				return fmt.Errorf("demo: %w", err)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, MarkerFile), []byte(markerText), 0o644); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	return nil
}

// isDemoDir reports whether dir holds the marker a demo writes.
func isDemoDir(dir string) bool {
	st, err := os.Lstat(filepath.Join(dir, MarkerFile))
	return err == nil && st.Mode().IsRegular()
}
