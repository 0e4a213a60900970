package receiver

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
)

// readBody reads the whole request body, gunzipping it if Content-Encoding says gzip, and
// refuses more than limit bytes (before or after decompression) with an error wrapping
// ErrTooLarge. The body is read whole because every event of a request must be validated
// before any is published; the limit, times MaxConcurrent, bounds the memory this takes.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.ContentLength > limit {
		return nil, fmt.Errorf("%w: Content-Length %d exceeds %d bytes", ErrTooLarge, r.ContentLength, limit)
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, limit)
	switch enc := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); enc {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(body)
		if err != nil {
			return nil, badRequest("gzip: %v", err)
		}
		defer zr.Close()
		body = zr
	default:
		return nil, &httpError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("Content-Encoding %q not supported (use gzip or none)", enc)}
	}
	b, err := io.ReadAll(io.LimitReader(body, limit+1))
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, limit)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return nil, &httpError{code: http.StatusRequestTimeout, msg: fmt.Sprintf("request body not received in time (%d bytes so far)", len(b))}
	case err != nil:
		return nil, badRequest("read body: %v", err)
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("%w: more than %d bytes after decompression", ErrTooLarge, limit)
	}
	return b, nil
}

// httpError is an error with its HTTP status.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}
