package faultsuite

import (
	"fmt"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "ditto-faulttest-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binsDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
