package study

import (
	"errors"
	"strings"
	"testing"
)

func TestEndpointPolicyKeyEnvs(t *testing.T) {
	def := EndpointPolicy{}
	custom := EndpointPolicy{KeyEnvs: " TEAM_*, MY_KEY "}
	tests := []struct {
		p    EndpointPolicy
		name string
		want bool
	}{
		{def, "OPENAI_API_KEY", true},
		{def, "DITTO_KEY_ANTHROPIC", true},
		{def, "DITTO_KEY_", false}, // a prefix names variables beyond itself
		{def, "AWS_SECRET_ACCESS_KEY", false},
		{def, "DITTO_NATS_PASSWORD", false},
		{def, "OPENAI_API_KEY_2", false},
		{def, "HOME", false},
		{custom, "TEAM_A", true},
		{custom, "MY_KEY", true},
		{custom, "OPENAI_API_KEY", false}, // a list replaces the default
		{custom, "MY_KEY2", false},
	}
	for _, tc := range tests {
		if got := tc.p.AllowsKeyEnv(tc.name); got != tc.want {
			t.Errorf("%+v.AllowsKeyEnv(%s) = %v, want %v", tc.p, tc.name, got, tc.want)
		}
	}
}

func TestEndpointPolicyBaseURLs(t *testing.T) {
	p := EndpointPolicy{BaseURLs: "https://api.openai.com/v1, http://10.0.0.5:8000/"}
	tests := []struct {
		url  string
		want bool
	}{
		{"https://api.openai.com/v1", true},
		{"https://api.openai.com/v1/", true},
		{"https://API.openai.com/v1/sub", true},
		{"https://api.openai.com/v10", false}, // not under /v1
		{"https://api.openai.com", false},
		{"http://api.openai.com/v1", false}, // another scheme
		{"https://api.openai.com.evil.example/v1", false},
		{"https://api.openai.com:8443/v1", false},
		{"https://user:pw@api.openai.com/v1", false},
		{"http://10.0.0.5:8000/v1", true},
		{"http://10.0.0.5:8001/v1", false},
	}
	for _, tc := range tests {
		if got := p.AllowsBaseURL(tc.url); got != tc.want {
			t.Errorf("AllowsBaseURL(%s) = %v, want %v", tc.url, got, tc.want)
		}
	}
	if !(EndpointPolicy{}).AllowsBaseURL("http://anything.example/v1") {
		t.Error("an empty --base-urls must allow any base URL")
	}
}

func TestEndpointPolicyValidate(t *testing.T) {
	for _, bad := range []EndpointPolicy{{KeyEnvs: "OK,1BAD"}, {KeyEnvs: "*"}, {KeyEnvs: "A-B"},
		{BaseURLs: "ftp://x/"}, {BaseURLs: "https://u:p@x/v1"}, {BaseURLs: "api.openai.com"}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v.Validate() = nil, want an error", bad)
		}
	}
	for _, ok := range []EndpointPolicy{{}, {KeyEnvs: DefaultKeyEnvs, BaseURLs: "https://api.openai.com/v1"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v.Validate() = %v", ok, err)
		}
	}
}

// TestEndpointPolicyCheckSpec: the spec (api_key_env AWS_SECRET_ACCESS_KEY) is refused
// by field, saying what is allowed and which flag allows more; sim endpoints are not checked.
func TestEndpointPolicyCheckSpec(t *testing.T) {
	m := base()
	m["endpoints"].(map[string]any)["remote"] = map[string]any{"base_url": "https://attacker.example/v1", "api_key_env": "AWS_SECRET_ACCESS_KEY", "models": []any{"org/model-x"}}
	s, err := parseMap(t, m)
	if err != nil {
		t.Fatal(err)
	}
	err = EndpointPolicy{BaseURLs: "https://api.openai.com/v1"}.Check(s)
	var ve *ValidationError
	if !errors.As(err, &ve) || !ve.Has("endpoints.remote.api_key_env") || !ve.Has("endpoints.remote.base_url") || len(ve.Problems) != 2 {
		t.Fatalf("Check = %v, want problems at endpoints.remote.api_key_env and .base_url", err)
	}
	for _, want := range []string{"AWS_SECRET_ACCESS_KEY", "DITTO_KEY_*, OPENAI_API_KEY", "--key-envs", "https://attacker.example/v1", "--base-urls"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Check's error does not say %q:\n%v", want, err)
		}
	}
	if err := (EndpointPolicy{KeyEnvs: "AWS_SECRET_ACCESS_KEY"}).Check(s); err != nil {
		t.Errorf("a policy listing the variable refused the spec: %v", err)
	}
}

func TestEndpointPolicyCheckJob(t *testing.T) {
	ep := JobEndpoint{Name: "remote", BaseURL: "https://x.example/v1", APIKeyEnv: "AWS_SECRET_ACCESS_KEY"}
	err := EndpointPolicy{}.CheckJob(ep)
	if !errors.Is(err, ErrEndpointNotAllowed) || !strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") {
		t.Errorf("CheckJob = %v, want ErrEndpointNotAllowed naming the variable", err)
	}
	if err := (EndpointPolicy{}).CheckJob(JobEndpoint{Name: "sim", Sim: true}); err != nil {
		t.Errorf("CheckJob(sim) = %v", err)
	}
}

func TestEndpointPolicySecrets(t *testing.T) {
	t.Setenv("DITTO_KEY_POLICYTEST", "secret-value-123")
	t.Setenv("DITTO_KEY_SHORT", "abc")
	t.Setenv("UNLISTED_POLICYTEST", "other-secret-456")
	got := EndpointPolicy{}.Secrets()
	has := func(v string) bool {
		for _, s := range got {
			if s == v {
				return true
			}
		}
		return false
	}
	if !has("secret-value-123") || has("abc") || has("other-secret-456") {
		t.Errorf("Secrets() = %v, want the allowed variables' values of %d bytes or more only", got, MinSecretLen)
	}
}
