package journal

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// Kept response headers (replay.keep_headers) go through the rule like
// every other field: a secret header's value is hidden whatever it is, a
// URL's password in any other value is hidden, and an event with nothing
// to hide is recorded as it is (no copy).
func TestRedactKeptHeaders(t *testing.T) {
	ev := &ClientRequest{Seq: 1, Outcome: OutcomeOK, Headers: map[string]string{
		"X-Chosen-Target": "backup",
		"Set-Cookie":      "session=s3cr3t",
		"Location":        "http://admin:hunter2@gw.local/v1",
	}}
	var buf bytes.Buffer
	w := NewWriter(&buf, NewClock(time.Now()))
	w.RecordAt(5, ev)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	line := buf.String()
	for _, secret := range []string{"s3cr3t", "hunter2"} {
		if strings.Contains(line, secret) {
			t.Errorf("journal holds %q: %s", secret, line)
		}
	}
	for _, kept := range []string{`"X-Chosen-Target":"backup"`, `"Set-Cookie":"REDACTED"`, `admin:REDACTED@gw.local`} {
		if !strings.Contains(line, kept) {
			t.Errorf("journal line lacks %s: %s", kept, line)
		}
	}
	if ev.Headers["Set-Cookie"] != "session=s3cr3t" {
		t.Error("the producer's event was changed")
	}
	plain := &ClientRequest{Seq: 2, Headers: map[string]string{"X-Chosen-Target": "primary"}}
	if redactPayload(plain) != Payload(plain) {
		t.Error("an event with nothing to hide was copied")
	}
}
