// Package notify tells someone that a rehearsal ended: it POSTs a JSON
// summary of the run (verdict, failed expectations, report path, run id)
// to a webhook.
//
// The document has a top-level "text" (what Slack, Mattermost and
// Rocket.Chat incoming webhooks display) beside plain fields for generic
// receivers (a CI bot, an n8n or Zapier hook, a small HTTP service), so one
// URL flag serves both. Webhook URLs carry their credential in the path or
// query (a Slack hook's path is its secret), so the URL is never written
// whole to a log or an error: Redact keeps the scheme and host only.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
)

// Schema names the summary's format; it changes only incompatibly.
const Schema = "rehearse.notify/v1"

// Verdicts of a run, as Summary.Verdict.
const (
	Passed      = "passed"      // every expectation met
	Failed      = "failed"      // an expectation was not met
	Interrupted = "interrupted" // stopped before its planned end
	Error       = "error"       // the harness could not run or finish it
)

// Expectation is one expectation that was not met.
type Expectation struct {
	Name     string `json:"name"`
	Observed string `json:"observed"`
	Want     string `json:"want"`
	Message  string `json:"message,omitempty"`
}

// Summary is the document a webhook receives when a run ends.
type Summary struct {
	// Text is the summary in one line, for chat webhooks.
	Text     string `json:"text"`
	Schema   string `json:"schema"`
	Verdict  string `json:"verdict"`
	RunID    string `json:"run_id,omitempty"`
	Scenario string `json:"scenario"`
	// Expectations counts the run's expectations; Failed lists those not
	// met (not observable counts as not met).
	Expectations int           `json:"expectations"`
	Failed       []Expectation `json:"failed_expectations"`
	// RunDir is the run directory and Report its report.html, absolute
	// paths on the machine that ran it; empty when none was written.
	RunDir string `json:"run_dir,omitempty"`
	Report string `json:"report,omitempty"`
	// ExitCode is the exit code of `rehearse run` (0, 1, 2, 3, 130).
	ExitCode  int       `json:"exit_code"`
	Error     string    `json:"error,omitempty"`
	Host      string    `json:"host,omitempty"`
	StartedAt time.Time `json:"started_at,omitzero"`
	EndedAt   time.Time `json:"ended_at"`
}

// Line builds Summary.Text from the other fields:
// "rehearse weekly: FAILED — 2 of 7 expectations not met (opens_within,
// closes_within) · report /runs/…/report.html".
func (s *Summary) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "rehearse %s: ", s.Scenario)
	switch s.Verdict {
	case Passed:
		if s.Expectations == 0 {
			b.WriteString("finished, no expectations set")
		} else {
			fmt.Fprintf(&b, "passed, all %d expectations met", s.Expectations)
		}
	case Failed:
		fmt.Fprintf(&b, "FAILED, %d of %d expectations not met", len(s.Failed), s.Expectations)
	case Interrupted:
		b.WriteString("INTERRUPTED before its planned end")
	default:
		b.WriteString("HARNESS ERROR")
	}
	if len(s.Failed) > 0 {
		names := make([]string, 0, len(s.Failed))
		for _, f := range s.Failed {
			names = append(names, f.Name)
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(names, ", "))
	}
	if s.Error != "" && s.Verdict != Failed {
		fmt.Fprintf(&b, ": %s", s.Error)
	}
	if s.Host != "" {
		fmt.Fprintf(&b, " · on %s", s.Host)
	}
	if s.Report != "" {
		fmt.Fprintf(&b, " · report %s", s.Report)
	}
	if s.RunID != "" {
		fmt.Fprintf(&b, " · run %s", s.RunID)
	}
	return b.String()
}

// chatEscape escapes the three characters Slack's message format (and
// Mattermost's) reads as markup in "text": a scenario named "<!here>" must
// not ping a channel. The structured fields stay as they are.
func chatEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// ParseURL checks a webhook URL given on the command line: absolute http
// or https with a host. The error names the URL redacted.
func ParseURL(raw string) (*url.URL, error) {
	u, err := rehearse.ParseHTTPURL(raw)
	if err != nil {
		// Not err's text: a webhook's path is its secret, so the URL is
		// named by its scheme and host alone.
		return nil, fmt.Errorf("%w: --notify %s: want an http:// or https:// URL", rehearse.ErrInvalid, Redact(raw))
	}
	return u, nil
}

// Redact returns the URL's scheme and host only ("https://hooks.slack.com/…"):
// the path, query and user info of a webhook URL are its credential.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(unparseable URL)"
	}
	out := u.Scheme + "://" + u.Host
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		out += "/…"
	}
	return out
}

// Sender posts summaries to one webhook.
type Sender struct {
	// URL is the webhook.
	URL string
	// Client sends the requests; nil means a client with Timeout.
	Client *http.Client
	// Timeout bounds each attempt; 0 means 10 s.
	Timeout time.Duration
	// Attempts is how many times a delivery is tried; 0 means 3. A
	// network error, a 5xx or a 429 is retried; other answers are final.
	Attempts int
	// Backoff is the wait before the second attempt, doubled after; 0
	// means 1 s. A 429's or 503's Retry-After (seconds, at most 30) wins.
	Backoff time.Duration
}

// DeliveryError is a delivery that did not succeed; its text names the
// webhook redacted.
type DeliveryError struct {
	Host     string // redacted URL
	Attempts int
	Status   int // last HTTP status; 0 when no answer came
	Err      error
}

func (e *DeliveryError) Error() string {
	if e.Status != 0 {
		return fmt.Sprintf("notify %s: HTTP %d after %d attempts", e.Host, e.Status, e.Attempts)
	}
	return fmt.Sprintf("notify %s: %v after %d attempts", e.Host, e.Err, e.Attempts)
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// Send posts s as JSON, redacted by the one rule of internal/redact. It
// fills Text and Schema when empty. The error,
// if any, is a *DeliveryError that never contains the URL's path or query.
func (snd *Sender) Send(ctx context.Context, s Summary) error {
	if s.Schema == "" {
		s.Schema = Schema
	}
	if s.Text == "" {
		s.Text = chatEscape(s.Line())
	}
	if s.Failed == nil {
		s.Failed = []Expectation{}
	}
	body, err := json.Marshal(s)
	if err != nil {
		return err
	}
	// A webhook payload is written somewhere else for good (a chat
	// channel): the run's error text may hold a URL with a password.
	body = redact.JSON(body)
	timeout := snd.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	client := snd.Client
	if client == nil {
		client = &http.Client{Timeout: timeout}
	}
	attempts := snd.Attempts
	if attempts <= 0 {
		attempts = 3
	}
	backoff := snd.Backoff
	if backoff <= 0 {
		backoff = time.Second
	}
	de := &DeliveryError{Host: Redact(snd.URL)}
	for i := 1; i <= attempts; i++ {
		de.Attempts = i
		status, wait, err := snd.post(ctx, client, timeout, body)
		if err == nil {
			return nil
		}
		de.Status, de.Err = status, err
		retry := status == 0 || status >= 500 || status == http.StatusTooManyRequests
		if !retry || i == attempts || ctx.Err() != nil {
			break
		}
		if wait <= 0 {
			wait = backoff
			backoff *= 2
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			de.Err = ctx.Err()
			return de
		case <-t.C:
		}
	}
	return de
}

// post makes one attempt. It returns the status (0 without an answer), the
// Retry-After the receiver asked for, and an error scrubbed of the URL.
func (snd *Sender) post(ctx context.Context, client *http.Client, timeout time.Duration, body []byte) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, snd.URL, bytes.NewReader(body))
	if err != nil {
		return 0, 0, errors.New("invalid webhook URL")
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "rehearse-notify")
	resp, err := client.Do(req)
	if err != nil {
		// *url.Error repeats the whole URL: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return resp.StatusCode, 0, nil
	}
	var wait time.Duration
	if n, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && n >= 0 {
		wait = min(time.Duration(n)*time.Second, 30*time.Second)
	}
	return resp.StatusCode, wait, fmt.Errorf("HTTP %d", resp.StatusCode)
}
