package inject

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestUsageCharged: a fake chat completion carries its configured usage
// block and the journal records the tokens; a tool call and a faulted
// call cost none; the idempotency key is recorded as a fingerprint, equal
// for equal keys, and the announced budget is read.
func TestUsageCharged(t *testing.T) {
	s, mem := startServer(t, []UpstreamConfig{{Name: "llm", Healthy: &HealthyConfig{Usage: &UsageConfig{PromptTokens: 30, CompletionTokens: 7}}}},
		[]FaultSpec{{Type: "status", Upstream: "llm", Params: &StatusParams{Code: 503}, Match: &MatchConfig{Header: map[string]string{"X-Fail": ""}}}})
	c := newClient(5 * time.Second)
	post := func(path string, hdr ...string) *http.Response {
		req, _ := http.NewRequest("POST", s.URL("llm")+path, strings.NewReader(`{"model":"m"}`))
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := post("/v1/chat/completions", "Idempotency-Key", "order-1", "X-Request-Timeout-Ms", "1500")
	var body struct {
		Usage struct {
			Prompt     int64 `json:"prompt_tokens"`
			Completion int64 `json:"completion_tokens"`
			Total      int64 `json:"total_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if body.Usage.Prompt != 30 || body.Usage.Completion != 7 || body.Usage.Total != 37 {
		t.Errorf("usage %+v", body.Usage)
	}
	post("/v1/chat/completions", "Idempotency-Key", "order-1", "X-Fail", "1").Body.Close()
	post("/tools/search", "Idempotency-Key", "order-2").Body.Close()
	evs := upstreamEvents(mem)
	if len(evs) != 3 {
		t.Fatalf("%d events", len(evs))
	}
	want := []struct{ p, c int64 }{{30, 7}, {0, 0}, {0, 0}}
	for i, ev := range evs {
		if ev.PromptTokens != want[i].p || ev.CompletionTokens != want[i].c {
			t.Errorf("call %d charged %d+%d tokens, want %d+%d", i, ev.PromptTokens, ev.CompletionTokens, want[i].p, want[i].c)
		}
	}
	if k := evs[0].IdempotencyKey; !strings.HasPrefix(k, "sha256:") || strings.Contains(k, "order") || k != evs[1].IdempotencyKey || k == evs[2].IdempotencyKey {
		t.Errorf("key fingerprints %q %q %q", evs[0].IdempotencyKey, evs[1].IdempotencyKey, evs[2].IdempotencyKey)
	}
	if evs[0].Budget != 1500*time.Millisecond || evs[2].Budget != 0 {
		t.Errorf("budgets %s %s", evs[0].Budget, evs[2].Budget)
	}
}
