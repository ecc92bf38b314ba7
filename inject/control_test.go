package inject

import (
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse/internal/testutil"
)

func TestControlAPI(t *testing.T) {
	reg := prometheus.NewRegistry()
	s, _ := startServer(t, []UpstreamConfig{{Name: "search"}, {Name: "weather"}}, nil, WithRegisterer(reg))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	done := make(chan error, 1)
	go func() { done <- s.ServeControl(ctx, ln) }()
	base := "http://" + ln.Addr().String()
	c := newClient(5 * time.Second)
	do := func(method, path, body string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		switch {
		case strings.HasPrefix(body, "{"):
			req.Header.Set("Content-Type", "application/json")
		case body != "":
			req.Header.Set("Content-Type", "application/yaml")
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, body := do("POST", "/faults", `{"name":"s503","type":"status","upstream":"search","params":{"code":503}}`)
	if code != 201 || !strings.Contains(body, `"state": "active"`) {
		t.Fatalf("add: %d %s", code, body)
	}
	code, body = do("POST", "/faults", "type: latency\nupstream: weather\nat: 1h\nparams: {fixed: 1s}\n")
	if code != 201 || !strings.Contains(body, `"state": "pending"`) {
		t.Fatalf("add yaml: %d %s", code, body)
	}
	code, body = do("POST", "/faults", `{"type":"status","upstream":"search","params":{"kode":1}}`)
	if code != 400 || !strings.Contains(body, `unknown field \"kode\"`) {
		t.Fatalf("bad add: %d %s", code, body)
	}
	if resp, _, err := get(t, c, s.URL("search"), nil); err != nil || resp.StatusCode != 503 {
		t.Fatalf("fault not in force: %v", err)
	}
	code, body = do("GET", "/faults", "")
	var list []FaultStatus
	if err := json.Unmarshal([]byte(body), &list); err != nil || code != 200 || len(list) != 2 || list[0].Applied != 1 {
		t.Fatalf("list: %d %s %v", code, body, err)
	}
	if code, body = do("GET", "/upstreams", ""); code != 200 || !strings.Contains(body, s.Addr("weather")) {
		t.Fatalf("upstreams: %d %s", code, body)
	}
	if code, body = do("GET", "/fault-types", ""); code != 200 || !strings.Contains(body, "stream_cut") {
		t.Fatalf("types: %d %s", code, body)
	}
	if code, _ = do("DELETE", "/faults/s503", ""); code != 200 {
		t.Fatalf("delete: %d", code)
	}
	if code, _ = do("DELETE", "/faults/s503", ""); code != 404 {
		t.Fatalf("delete again: %d", code)
	}
	if code, body = do("DELETE", "/faults?upstream=weather", ""); code != 200 || !strings.Contains(body, `"removed": 1`) {
		t.Fatalf("clear: %d %s", code, body)
	}
	if resp, _, err := get(t, c, s.URL("search"), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("fault still in force: %v", err)
	}

	if got := testutil.Gathered(t, reg, "rehearse_inject_faults_applied_total", map[string]string{"upstream": "search", "fault": "s503"}); got != 1 {
		t.Fatalf("applied metric %v", got)
	}
	if got := testutil.Gathered(t, reg, "rehearse_inject_requests_total", map[string]string{"upstream": "search", "outcome": "completed"}); got != 2 {
		t.Fatalf("requests metric %v", got)
	}
	if got := testutil.Gathered(t, reg, "rehearse_inject_in_flight", map[string]string{"upstream": "search"}); got != 0 {
		t.Fatalf("in-flight metric %v", got)
	}
	ln.Close()
	<-done
}
