package cli

import (
	"net/url"
	"strings"
)

// RedactURLs returns s, one URL or several separated by commas, with each URL's user
// information (a user and password, or a token in the user's place as NATS allows) and query
// replaced by "xxxxx", so that it can be printed. A part that does not parse as a URL with a
// host is replaced whole when it holds an '@' or a '?'.
func RedactURLs(s string) string {
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = redactURL(strings.TrimSpace(p))
	}
	return strings.Join(parts, ",")
}

func redactURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		if strings.ContainsAny(s, "@?") {
			return "(not shown: not a URL, and it may hold a credential)"
		}
		return s
	}
	if u.User != nil {
		u.User = url.User("xxxxx")
	}
	if u.RawQuery != "" {
		u.RawQuery = "xxxxx"
	}
	return u.String()
}
