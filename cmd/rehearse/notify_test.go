package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/notify"
	"github.com/halfopen/rehearse/rehearsal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

// webhook is a real loopback HTTP server that records every document.
type webhook struct {
	mu   sync.Mutex
	docs []map[string]any
	raw  [][]byte
}

func newWebhook(t *testing.T) (*webhook, string) {
	h := &webhook{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Errorf("webhook got non-JSON: %v: %q", err, b)
		}
		h.mu.Lock()
		h.docs, h.raw = append(h.docs, doc), append(h.raw, b)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return h, srv.URL + "/hook/T0/B0/s3cr3t-path"
}

func TestRunNotifyDeliversOneDocumentPerRun(t *testing.T) {
	h, url := newWebhook(t)
	dir := t.TempDir()
	pass := filepath.Join(dir, "tiny.yaml")
	fail := filepath.Join(dir, "fails.yaml")
	os.WriteFile(pass, []byte("name: tiny\nreplay: {rate: 20, duration: 1s}\n"), 0o644)
	// No fault, so nothing can open: the expectation is not met.
	os.WriteFile(fail, []byte("name: fails\nreplay: {rate: 20, duration: 1s}\nexpectations:\n  upstreams: [search]\n  opens_within: 5s\n"), 0o644)

	out, errOut, code := execute(t, "run", pass, "--out", filepath.Join(dir, "a"), "--quiet", "--notify", url)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	if len(h.docs) != 1 {
		t.Fatalf("%d documents after one run, want 1", len(h.docs))
	}
	d := h.docs[0]
	if d["verdict"] != "passed" || d["exit_code"] != 0.0 || d["scenario"] != "tiny" || d["run_id"] == "" {
		t.Errorf("passing run: %v", d)
	}
	if rp, _ := d["report"].(string); !filepath.IsAbs(rp) || !strings.HasSuffix(rp, filepath.Join("a", "report.html")) {
		t.Errorf("report path %q", d["report"])
	}

	_, errOut, code = execute(t, "run", fail, "--out", filepath.Join(dir, "b"), "--quiet", "--notify", url)
	if code != 1 {
		t.Fatalf("failing run: exit %d, want 1\n%s", code, errOut)
	}
	if len(h.docs) != 2 {
		t.Fatalf("%d documents after two runs, want 2", len(h.docs))
	}
	d = h.docs[1]
	failed, _ := d["failed_expectations"].([]any)
	if d["verdict"] != "failed" || d["exit_code"] != 1.0 || len(failed) == 0 {
		t.Errorf("failing run: %v", d)
	} else if f := failed[0].(map[string]any); !strings.HasPrefix(f["name"].(string), "opens_within") {
		t.Errorf("failed expectation %v", f)
	}
	if text, _ := d["text"].(string); !strings.Contains(text, "FAILED") || !strings.Contains(text, "opens_within") {
		t.Errorf("text %q", d["text"])
	}
	for _, s := range []string{errOut} {
		if strings.Contains(s, "s3cr3t") {
			t.Errorf("log shows the webhook's secret path:\n%s", s)
		}
	}

	// A scenario that does not parse is a run that did not happen: that is
	// news too, and its exit code stays 2.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("replay:\n  rat: 10\n"), 0o644)
	if _, _, code = execute(t, "run", bad, "--quiet", "--notify", url); code != 2 {
		t.Fatalf("bad scenario: exit %d", code)
	}
	if len(h.docs) != 3 || h.docs[2]["verdict"] != "error" || h.docs[2]["exit_code"] != 2.0 {
		t.Errorf("bad scenario: %d documents, last %v", len(h.docs), h.docs[len(h.docs)-1])
	}
}

func TestRunNotifyFailureKeepsExitCode(t *testing.T) {
	dead := "http://" + testutil.FreeAddr(t) + "/hook/s3cr3t-path?token=s3cr3t"
	dir := t.TempDir()
	sc := filepath.Join(dir, "tiny.yaml")
	os.WriteFile(sc, []byte("name: tiny\nreplay: {rate: 20, duration: 1s}\n"), 0o644)
	_, errOut, code := execute(t, "run", sc, "--out", filepath.Join(dir, "a"), "--quiet", "--notify", dead)
	if code != 0 {
		t.Fatalf("exit %d with an unreachable webhook, want the run's 0\n%s", code, errOut)
	}
	if !strings.Contains(errOut, "run notification not delivered") {
		t.Errorf("failed delivery not logged:\n%s", errOut)
	}
	if strings.Contains(errOut, "s3cr3t") {
		t.Errorf("log shows the webhook's secret:\n%s", errOut)
	}
	if _, _, code := execute(t, "run", sc, "--notify", "hooks.example/x"); code != 2 {
		t.Errorf("a --notify that is not a URL: exit %d, want 2", code)
	}
}

// TestNotifyUnjudgedListsNoFailure: an interrupted run, or one whose
// harness stalled, listed the expectations it could not judge under
// failed_expectations, as a gateway regression. Now the list is empty and
// the verdict and error say what happened.
func TestNotifyUnjudgedListsNoFailure(t *testing.T) {
	unmet := []expect.ExpectationResult{{Name: "closes_within", Outcome: expect.NotObservable, Observed: "not observed", Want: "<= 45 s"}}
	for _, c := range []struct {
		name    string
		run     analysis.RunInfo
		replay  analysis.ReplayStats
		err     error
		verdict string
	}{
		{"interrupted", analysis.RunInfo{EndReason: journal.EndInterrupted}, analysis.ReplayStats{}, rehearse.ErrInterrupted, notify.Interrupted},
		{"stalled", analysis.RunInfo{EndReason: journal.EndCompleted}, analysis.ReplayStats{Stall: &analysis.Stall{FromS: 2, ToS: 12, Missed: 99, Stalls: 1}},
			rehearse.ErrEnvironment, notify.Error},
	} {
		a := &analysis.Analysis{Run: c.run, Replay: c.replay}
		s := runSummary("drill", &rehearsal.Result{Analysis: a, Expectations: unmet}, c.err)
		if s.Verdict != c.verdict || len(s.Failed) != 0 || s.Expectations != 1 {
			t.Errorf("%s: verdict %s, failed %+v", c.name, s.Verdict, s.Failed)
		}
	}
	// A judged run still lists what failed.
	a := &analysis.Analysis{Run: analysis.RunInfo{EndReason: journal.EndCompleted}}
	if s := runSummary("drill", &rehearsal.Result{Analysis: a, Expectations: unmet}, rehearse.ErrExpectations); len(s.Failed) != 1 {
		t.Errorf("judged run: failed %+v", s.Failed)
	}
}
