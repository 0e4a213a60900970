package receiver

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/dittolab/ditto/events"

	"github.com/dittolab/ditto/internal/jsonend"
)

// Token is one bearer token and the studies it may write.
type Token struct {
	Name    string   `json:"name"`
	Secret  string   `json:"token,omitempty"`  // the token itself, or
	SHA256  string   `json:"sha256,omitempty"` // its SHA-256 in hex: a file of digests holds no secret
	Studies []string `json:"studies"`          // study names, or "*" for every study
}

// MinSecretLen is the shortest token accepted.
const MinSecretLen = 16

// ParseToken reads the flag form SECRET=study1,study2 ("*" for every study).
func ParseToken(s string) (Token, error) {
	// Cut at the last '=': study names have none, base64 secrets may end in some.
	i := strings.LastIndexByte(s, '=')
	if i < 0 {
		return Token{}, fmt.Errorf("%w: token %q...: want SECRET=study1,study2", ErrConfig, prefix(s))
	}
	secret, studies := s[:i], s[i+1:]
	t := Token{Name: "flag:" + prefix(secret), Secret: secret, Studies: splitList(studies)}
	return t, t.validate()
}

func prefix(s string) string {
	if len(s) > 4 {
		return s[:4]
	}
	return s
}

func (t Token) validate() error {
	switch {
	case t.Secret == "" && t.SHA256 == "":
		return fmt.Errorf("%w: token %q has neither token nor sha256", ErrConfig, t.Name)
	case t.Secret != "" && t.SHA256 != "":
		return fmt.Errorf("%w: token %q has both token and sha256", ErrConfig, t.Name)
	case t.Secret != "" && len(t.Secret) < MinSecretLen:
		return fmt.Errorf("%w: token %q is shorter than %d characters", ErrConfig, t.Name, MinSecretLen)
	case t.SHA256 != "":
		if b, err := hex.DecodeString(t.SHA256); err != nil || len(b) != sha256.Size {
			return fmt.Errorf("%w: token %q: sha256 must be 64 hex digits", ErrConfig, t.Name)
		}
	}
	if len(t.Studies) == 0 {
		return fmt.Errorf("%w: token %q is bound to no study (use \"*\" for every study)", ErrConfig, t.Name)
	}
	for _, s := range t.Studies {
		if s == "*" {
			continue
		}
		if err := events.ValidateToken("study", s); err != nil {
			return fmt.Errorf("%w: token %q: %v", ErrConfig, t.Name, err)
		}
	}
	return nil
}

// authFile is the JSON form of an auth file.
type authFile struct {
	Tokens []Token `json:"tokens"`
}

// LoadAuthFile reads a JSON auth file:
//
//	{"tokens": [
//	  {"name": "invoice-agent", "sha256": "<hex sha256 of the token>", "studies": ["prod-invoice"]},
//	  {"name": "ops", "token": "<the token>", "studies": ["*"]}
//	]}
func LoadAuthFile(path string) ([]Token, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: auth file: %v", ErrConfig, err)
	}
	var f authFile
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := jsonend.Decode(dec, &f); err != nil {
		return nil, fmt.Errorf("%w: auth file %s: %v", ErrConfig, path, err)
	}
	for _, t := range f.Tokens {
		if err := t.validate(); err != nil {
			return nil, err
		}
	}
	return f.Tokens, nil
}

// Principal is who a request authenticated as.
type Principal struct {
	Name    string
	all     bool
	studies []string
}

// May reports whether the principal may write study.
func (p *Principal) May(study string) bool { return p.all || slices.Contains(p.studies, study) }

// DefaultStudy is the study of spans that name none: the principal's first named study, else
// fallback.
func (p *Principal) DefaultStudy(fallback string) string {
	if len(p.studies) > 0 {
		return p.studies[0]
	}
	return fallback
}

// authenticator maps the SHA-256 of each token to its principal. Looking up the digest of the
// presented token, rather than comparing secrets, leaks nothing useful through timing.
type authenticator struct {
	open      bool // InsecureNoAuth
	anonymous *Principal
	tokens    map[[sha256.Size]byte]*Principal
}

func newAuthenticator(tokens []Token, open bool) (*authenticator, error) {
	a := &authenticator{open: open, anonymous: &Principal{Name: "anonymous", all: true}, tokens: map[[sha256.Size]byte]*Principal{}}
	for _, t := range tokens {
		if err := t.validate(); err != nil {
			return nil, err
		}
		var key [sha256.Size]byte
		if t.Secret != "" {
			key = sha256.Sum256([]byte(t.Secret))
		} else {
			b, _ := hex.DecodeString(t.SHA256)
			copy(key[:], b)
		}
		p := &Principal{Name: t.Name}
		for _, s := range t.Studies {
			if s == "*" {
				p.all = true
			} else {
				p.studies = append(p.studies, s)
			}
		}
		if _, dup := a.tokens[key]; dup {
			return nil, fmt.Errorf("%w: token %q is listed twice", ErrConfig, t.Name)
		}
		a.tokens[key] = p
	}
	return a, nil
}

func (a *authenticator) authenticate(r *http.Request) (*Principal, error) {
	return a.authenticateHeader(r.Header.Get("Authorization"))
}

// authenticateHeader checks an Authorization header's value (HTTP, or gRPC's authorization
// metadata).
func (a *authenticator) authenticateHeader(h string) (*Principal, error) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || strings.TrimSpace(tok) == "" {
		if a.open {
			return a.anonymous, nil
		}
		return nil, ErrUnauthorized
	}
	if p, ok := a.tokens[sha256.Sum256([]byte(strings.TrimSpace(tok)))]; ok {
		return p, nil
	}
	if a.open && len(a.tokens) == 0 {
		return a.anonymous, nil
	}
	return nil, ErrUnauthorized
}
