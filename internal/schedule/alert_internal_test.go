package schedule

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/dittolab/ditto/internal/report"
)

// TestAlertErrorsHideTheURL: a webhook URL is often a credential (Slack's holds its secret in
// the path); the errors of a failed alert, and of a bad URL, leave it out.
func TestAlertErrorsHideTheURL(t *testing.T) {
	const secret = "T000-B000-XXsecretXX"
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no", http.StatusForbidden)
	}))
	defer refusing.Close()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	for _, u := range []string{refusing.URL + "/services/" + secret, gone.URL + "/services/" + secret, "http://h/%zz" + secret} {
		s := &Scheduler{cfg: Config{WebhookURL: u, HTTPClient: &http.Client{}}}
		err := s.alert(context.Background(), &report.Report{Name: "r"}, "dir", nil)
		if !errors.Is(err, ErrWebhook) || strings.Contains(err.Error(), secret) {
			t.Errorf("alert to %s = %v, want ErrWebhook without the URL", u, err)
		}
	}
	err := Config{Cron: "@daily", ReportsDir: "r", WebhookURL: "ftp://" + secret}.Validate()
	if !errors.Is(err, ErrConfig) || strings.Contains(err.Error(), secret) {
		t.Errorf("Validate() with an ftp webhook = %v, want ErrConfig without the URL", err)
	}
}
