package receiver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/dittolab/ditto/internal/receiver"
)

func TestParseToken(t *testing.T) {
	tests := []struct {
		give    string
		want    []string
		wantErr bool
	}{
		{give: "0123456789abcdef=prod", want: []string{"prod"}},
		{give: "0123456789abcdef==a,b", want: []string{"a", "b"}}, // a base64 secret ending in '='
		{give: "0123456789abcdef=*", want: []string{"*"}},
		{give: "short=prod", wantErr: true},
		{give: "0123456789abcdef", wantErr: true},
		{give: "0123456789abcdef=", wantErr: true},
		{give: "0123456789abcdef=bad.study", wantErr: true},
	}
	for _, tt := range tests {
		got, err := receiver.ParseToken(tt.give)
		if (err != nil) != tt.wantErr || (err == nil && !equal(got.Studies, tt.want)) {
			t.Errorf("ParseToken(%q) = %v, %v; want studies %v, error %v", tt.give, got.Studies, err, tt.want, tt.wantErr)
		}
		if err != nil && !errors.Is(err, receiver.ErrConfig) {
			t.Errorf("ParseToken(%q) error %v is not ErrConfig", tt.give, err)
		}
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestAuthFile(t *testing.T) {
	dir := t.TempDir()
	sum := sha256.Sum256([]byte("hashed-token-0123456789"))
	good := filepath.Join(dir, "auth.json")
	os.WriteFile(good, []byte(`{"tokens": [
		{"name": "hashed", "sha256": "`+hex.EncodeToString(sum[:])+`", "studies": ["prod"]},
		{"name": "plain", "token": "plain-token-0123456789", "studies": ["*"]}]}`), 0o600)
	e := newEnv(t, func(c *receiver.Config) { c.Tokens = nil; c.AuthFile = good })
	for tok, want := range map[string]int{
		"hashed-token-0123456789": http.StatusOK,
		"plain-token-0123456789":  http.StatusOK,
		tokAll:                    http.StatusUnauthorized, // not in the file
	} {
		resp, body := e.post(t, "/v1/events", tok, "application/x-ndjson", ndjson(t, runEvents(t, "prod", "r", 0)))
		if resp.StatusCode != want {
			t.Errorf("token %q: %d %s, want %d", tok, resp.StatusCode, body, want)
		}
	}
	for name, content := range map[string]string{
		"unknown field": `{"tokens": [{"name": "x", "token": "plain-token-0123456789", "studies": ["*"], "admin": true}]}`,
		"no studies":    `{"tokens": [{"name": "x", "token": "plain-token-0123456789"}]}`,
		"bad digest":    `{"tokens": [{"name": "x", "sha256": "abc", "studies": ["*"]}]}`,
		"both":          `{"tokens": [{"name": "x", "token": "plain-token-0123456789", "sha256": "` + hex.EncodeToString(sum[:]) + `", "studies": ["*"]}]}`,
		"not json":      `tokens: x`,
		"trailing data": `{"tokens": [{"name": "x", "token": "plain-token-0123456789", "studies": ["*"]}]} {"tokens": []}`,
	} {
		path := filepath.Join(dir, "bad.json")
		os.WriteFile(path, []byte(content), 0o600)
		if _, err := receiver.LoadAuthFile(path); !errors.Is(err, receiver.ErrConfig) {
			t.Errorf("LoadAuthFile(%s) = %v, want ErrConfig", name, err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tok := []receiver.Token{{Name: "t", Secret: "0123456789abcdef", Studies: []string{"*"}}}
	tests := []struct {
		name string
		give receiver.Config
		ok   bool
	}{
		{"defaults with a token", receiver.Config{Tokens: tok}, true},
		{"no token", receiver.Config{}, false},
		{"no token, insecure", receiver.Config{InsecureNoAuth: true}, true},
		{"request larger than the gate", receiver.Config{Tokens: tok, MaxEvents: 100, MaxPending: 10}, false},
		{"body below one event", receiver.Config{Tokens: tok, MaxBodyBytes: 1000}, false},
		{"unsafe default study", receiver.Config{Tokens: tok, DefaultStudy: "a b"}, false},
		{"missing auth file", receiver.Config{AuthFile: "/nonexistent/auth.json"}, false},
	}
	for _, tt := range tests {
		err := tt.give.Validate()
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, receiver.ErrConfig)) {
			t.Errorf("%s: Validate() = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
