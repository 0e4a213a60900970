package schedule

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/dittolab/ditto/internal/report"
)

// Alert is the JSON body POSTed to the webhook. Text is a Slack-compatible summary.
type Alert struct {
	Text     string           `json:"text"`
	Report   string           `json:"report"`
	Kind     string           `json:"kind"`
	Study    string           `json:"study"`
	Dir      string           `json:"dir"`
	Findings []report.Finding `json:"findings"`
}

func (s *Scheduler) alert(ctx context.Context, r *report.Report, dir string, fs []report.Finding) error {
	lines := []string{fmt.Sprintf("ditto: %d comparison(s) turned significant in the bad direction in report %s", len(fs), r.Name)}
	for _, f := range fs {
		lines = append(lines, "• "+f.Sentence)
	}
	body, err := json.Marshal(Alert{Text: strings.Join(lines, "\n"), Report: r.Name, Kind: r.Kind, Study: r.Study, Dir: dir, Findings: fs})
	if err != nil {
		return fmt.Errorf("schedule: alert: %w", err)
	}
	// A webhook URL is often a credential itself (Slack's is): no error quotes it.
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.WebhookURL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("%w: the URL does not parse", ErrWebhook)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.cfg.HTTPClient.Do(req)
	if err != nil {
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err
		}
		return fmt.Errorf("%w: %v", ErrWebhook, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%w: it answered %s", ErrWebhook, resp.Status)
	}
	return nil
}
