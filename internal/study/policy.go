package study

import (
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/dittolab/ditto/internal/cli"
)

// ErrEndpointNotAllowed: a job's endpoint reads its key from a variable, or sends it to a base
// URL, that the worker's operator does not allow (EndpointPolicy).
var ErrEndpointNotAllowed = errors.New("study: endpoint not allowed by the worker's policy")

// DefaultKeyEnvs are the variables an API key may be read from unless the operator says
// otherwise: any variable named DITTO_KEY_…, and OPENAI_API_KEY. A spec naming another
// variable (AWS_SECRET_ACCESS_KEY, DITTO_NATS_PASSWORD, HOME) is refused: a study spec, which
// anyone allowed to submit studies writes, must not make the worker send any of its
// environment to a URL the spec chose.
const DefaultKeyEnvs = "DITTO_KEY_*,OPENAI_API_KEY"

// EndpointPolicy is what the operator of the workers allows study endpoints to use. Workers
// enforce it on every job (a job outside it is rejected, its key never read); `producer study
// validate` and `submit` check a spec against it so that the author learns what is wrong
// before any worker does. Both read it from the same flags and variables.
type EndpointPolicy struct {
	// KeyEnvs lists, comma-separated, the variables a key may be read from: exact names, or
	// prefixes ending in "*" (DITTO_KEY_*). Empty means DefaultKeyEnvs.
	KeyEnvs string
	// BaseURLs lists, comma-separated, the base URLs keys may be sent to: an endpoint's
	// base_url must have the same scheme and host as one of them and a path at or under its
	// path. Empty means any.
	BaseURLs string
}

// RegisterFlags binds the policy to --key-envs (DITTO_KEY_ENVS) and --base-urls
// (DITTO_BASE_URLS).
func (p *EndpointPolicy) RegisterFlags(fs *flag.FlagSet) {
	cli.String(fs, &p.KeyEnvs, "key-envs", "DITTO_KEY_ENVS", DefaultKeyEnvs,
		"environment variables study endpoints may read API keys from (comma-separated names, or PREFIX_* patterns)")
	cli.String(fs, &p.BaseURLs, "base-urls", "DITTO_BASE_URLS", "",
		"base URLs study endpoints may send API keys to (comma-separated; a base_url must be one of them or under one); empty: any")
}

func splitComma(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Validate reports a malformed policy: a pattern that is not a variable name (with an optional
// trailing "*"), or a base URL that is not an http(s) URL.
func (p EndpointPolicy) Validate() error {
	for _, k := range splitComma(p.KeyEnvs) {
		if name := strings.TrimSuffix(k, "*"); name == "" || !isEnvName(name) {
			return fmt.Errorf("--key-envs: %q is not a variable name or a PREFIX_* pattern", k)
		}
	}
	for _, b := range splitComma(p.BaseURLs) {
		if _, err := parseBase(b); err != nil {
			return fmt.Errorf("--base-urls: %v", err)
		}
	}
	return nil
}

func parseBase(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%q is not an http(s) base URL (scheme, host and path only)", s)
	}
	return u, nil
}

func (p EndpointPolicy) keyEnvs() []string {
	if l := splitComma(p.KeyEnvs); len(l) > 0 {
		return l
	}
	return splitComma(DefaultKeyEnvs)
}

// AllowsKeyEnv reports whether a key may be read from the variable name.
func (p EndpointPolicy) AllowsKeyEnv(name string) bool {
	for _, k := range p.keyEnvs() {
		if prefix, ok := strings.CutSuffix(k, "*"); ok {
			if strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
				return true
			}
		} else if name == k {
			return true
		}
	}
	return false
}

// AllowsBaseURL reports whether keys may be sent to the base URL raw.
func (p EndpointPolicy) AllowsBaseURL(raw string) bool {
	allowed := splitComma(p.BaseURLs)
	if len(allowed) == 0 {
		return true
	}
	u, err := url.Parse(raw)
	if err != nil || u.User != nil {
		return false
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return slices.ContainsFunc(allowed, func(a string) bool {
		b, err := parseBase(a)
		if err != nil {
			return false
		}
		bp := strings.TrimSuffix(b.EscapedPath(), "/")
		return strings.EqualFold(u.Scheme, b.Scheme) && strings.EqualFold(u.Host, b.Host) &&
			(path == bp || strings.HasPrefix(path, bp+"/"))
	})
}

// checkEndpoint returns the problems of one endpoint under the policy, by field.
func (p EndpointPolicy) checkEndpoint(field string, sim bool, baseURL, keyEnv string, ps *problems) {
	if sim {
		return
	}
	if keyEnv != "" && !p.AllowsKeyEnv(keyEnv) {
		ps.add(field+".api_key_env", "%s is not a variable the workers read keys from (allowed: %s; the workers' operator allows more with harness-worker run --key-envs or DITTO_KEY_ENVS)",
			keyEnv, strings.Join(p.keyEnvs(), ", "))
	}
	if baseURL != "" && !p.AllowsBaseURL(baseURL) {
		ps.add(field+".base_url", "%s is not a base URL the workers send keys to (allowed: %s; the workers' operator allows more with harness-worker run --base-urls or DITTO_BASE_URLS)",
			baseURL, strings.Join(splitComma(p.BaseURLs), ", "))
	}
}

// Check reports every endpoint of the spec the policy does not allow, as a ValidationError
// naming each field.
func (p EndpointPolicy) Check(s *Spec) error {
	var ps problems
	for _, name := range sortedKeys(s.Endpoints) {
		e := s.Endpoints[name]
		p.checkEndpoint("endpoints."+name, e.Sim, e.BaseURL, e.APIKeyEnv, &ps)
	}
	return ps.err()
}

// CheckJob reports whether a worker may run the job's endpoint (ErrEndpointNotAllowed if not).
func (p EndpointPolicy) CheckJob(ep JobEndpoint) error {
	var ps problems
	p.checkEndpoint("endpoint "+ep.Name, ep.Sim, ep.BaseURL, ep.APIKeyEnv, &ps)
	if len(ps) == 0 {
		return nil
	}
	msgs := make([]string, len(ps))
	for i, f := range ps {
		msgs[i] = f.Error()
	}
	return fmt.Errorf("%w: %s", ErrEndpointNotAllowed, strings.Join(msgs, "; "))
}

// Secrets returns the values of every variable of the environment the policy lets keys be read
// from, for redaction (values shorter than MinSecretLen are left out: they could not be told
// apart from ordinary text).
func (p EndpointPolicy) Secrets() []string {
	var out []string
	for _, kv := range os.Environ() {
		name, v, _ := strings.Cut(kv, "=")
		if len(v) >= MinSecretLen && p.AllowsKeyEnv(name) {
			out = append(out, v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// MinSecretLen is the shortest key value Secrets returns.
const MinSecretLen = 8
