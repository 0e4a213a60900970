package cli

import "errors"

// ErrUsage marks an error in the command line (exit status 2). Wrap it with what is wrong:
// fmt.Errorf("%w: --study is required", cli.ErrUsage); the dispatcher prints the message
// and the command's usage line.
var ErrUsage = errors.New("usage")

// ExitError carries a specific exit status (e.g. 1 for "some lines were rejected").
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string { return e.Err.Error() }
func (e *ExitError) Unwrap() error { return e.Err }
