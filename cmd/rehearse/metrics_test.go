package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

func serveMetrics(t *testing.T, file, ctype string) string {
	t.Helper()
	body, err := os.ReadFile("../../observe/testdata/" + file)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctype)
		w.Write(body)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String() + "/metrics"
}

func TestMetricsCmd(t *testing.T) {
	url := serveMetrics(t, "haproxy-2.6.txt", "text/plain; version=0.0.4")
	out, errOut, code := execute(t, "metrics", url, "--preset", "haproxy", "--map", "be_search=search", "--series")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		url + ": 21 series kept",
		"DEPENDENCY           UPSTREAM  STATE",
		"be_search/search1    search    open",
		"be_weather/weather1  -         closed",
		"be_weather/weather2  -         open",
		`haproxy_server_status{proxy="be_search",server="search1",state="DOWN"} 1`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, _, code = execute(t, "metrics", url) // the reference preset on HAProxy output
	if code != 0 || !strings.Contains(out, "no breaker states: no usable openclaw_breaker_state series") {
		t.Errorf("wrong preset: exit %d\n%s", code, out)
	}
}

func TestMetricsCmdErrors(t *testing.T) {
	dead := "http://" + testutil.FreeAddr(t) + "/metrics"
	for _, tt := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"metrics", dead}, 3, "connection refused"},
		{[]string{"metrics", dead, "--preset", "nginx"}, 2, `--preset: unknown preset "nginx"`},
		{[]string{"metrics", "ftp://x"}, 2, `URL argument: want an absolute http:// or https:// URL, got "ftp://x"`},
		{[]string{"metrics", "--prom", "nope"}, 2, `--prom: want an absolute http:// or https:// URL, got "nope"`},
		{[]string{"metrics", dead, "--preset", "custom"}, 2, "--preset custom needs the mapping: --metric NAME"},
		{[]string{"metrics", dead, "--preset", "custom", "--metric", "x", "--value", "0"}, 2, `--value "0": want KEY=STATE`},
		{[]string{"metrics", dead, "--metric", "x"}, 2, "use them with --preset custom"},
		{[]string{"metrics", dead, "--map", "search"}, 2, `--map "search": want DEPENDENCY=UPSTREAM`},
		{[]string{"metrics"}, 2, "no metrics URL: give it as an argument"},
		{[]string{"metrics", "--selector", "job=\"x\""}, 2, "--selector and --query need --prom"},
	} {
		var out, errb bytes.Buffer
		root := newRootCmd(&out, &errb)
		root.SetArgs(tt.args)
		err := root.ExecuteContext(context.Background())
		if code := rehearse.ExitCode(err); code != tt.code || err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: exit %d, error %v; want %d and %q", tt.args, code, err, tt.code, tt.want)
		}
	}
}

// TestMetricsCmdCustomFlags: --preset custom takes its mapping by flags,
// here HAProxy's one-hot server status read as a custom mapping.
func TestMetricsCmdCustomFlags(t *testing.T) {
	url := serveMetrics(t, "haproxy-2.6.txt", "text/plain; version=0.0.4")
	out, errOut, code := execute(t, "metrics", url, "--preset", "custom", "--metric", "haproxy_server_status",
		"--dependency-label", "proxy", "--dependency-label", "server", "--state-label", "state",
		"--state", "UP=closed", "--state", "DOWN=open", "--state", "NOLB=half_open", "--map", "be_search=search")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"be_search/search1    search    open", "be_weather/weather1  -         closed"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
