package capture

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestOddTargets reads a real capture (scripts/wildcaptures.sh) of
// requests whose targets Go's URL parser refuses: every one comes out,
// with its target as written and the parser's reason, and tshark agrees.
func TestOddTargets(t *testing.T) {
	path := filepath.Join("testdata", "odd-targets.pcap")
	reqs, st, err := ReadFile(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got, raw []string
	for _, r := range reqs {
		got = append(got, r.Target)
		if r.TargetError != "" {
			raw = append(raw, r.Target)
		}
	}
	want := []string{"/%", "/%5", "/files/a%zz.txt?q=%41", "/caf\xc3\xa9", "/healthz", "/search?q=100%", "/%E0%A4%A"}
	if !slices.Equal(got, want) {
		t.Errorf("targets %q, want %q", got, want)
	}
	if w := []string{"/%", "/%5", "/files/a%zz.txt?q=%41", "/%E0%A4%A"}; !slices.Equal(raw, w) || st.RawTargets != 4 || st.Incomplete != 0 {
		t.Errorf("raw targets %q (%d), want %q; %d incomplete", raw, st.RawTargets, w, st.Incomplete)
	}
	compareTshark(t, path, reqs, false, "")
}

// TestInspectStats: --stats tells the method mix, idempotency, routes,
// streaming responses and what the replay will skip or send differently.
func TestInspectStats(t *testing.T) {
	var out, errOut strings.Builder
	_, err := Inspect(context.Background(), filepath.Join("..", "..", "scenarios", "captures", "agent-gateway.pcapng"),
		InspectOptions{Stats: true, Stdout: &out, Stderr: &errOut})
	if err != nil {
		t.Fatal(err)
	}
	checkShows(t, out.String(),
		"method POST  180 (90.0 %)",
		"non-idempotent  180 (90.0 % of complete requests",
		"route POST /tools/search  70 (35.0 %)",
		"streaming text/event-stream  20",
		"status 2xx  200",
		"write requests  180  POST, PUT, PATCH, DELETE: the replay refuses to start without --allow-writes")

	// Incomplete and refused requests are skipped with their reason,
	// numbers folded; raw targets and HTTP/1.0 are named.
	dir := t.TempDir()
	path := filepath.Join(dir, "odd.pcap")
	stream := "GET /%zz HTTP/1.1\r\nHost: h\r\n\r\nGET /bad HTTP/1.1\r\nHost: h\r\nNo colon\r\n\r\nGET /old HTTP/1.0\r\n\r\nPOST /cut HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\nabc"
	if err := os.WriteFile(path, streamCapture(t, []byte(stream)), 0o644); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	if _, err := Inspect(context.Background(), path, InspectOptions{Stats: true, Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	checkShows(t, out.String(),
		"raw target, sent verbatim (Go's URL parser: invalid URL escape \"%zz\")",
		"raw targets  1 (Go's URL parser refuses them; sent verbatim)",
		"replay  2 of 4 requests complete",
		"skipped  1  connection closed mid-request",
		"skipped  1  malformed request: net/http refuses it: malformed MIME header: missing colon\n",
		"sent as HTTP/1.1  1  captured as HTTP/1.0")
	if strings.Contains(out.String(), "No colon") {
		t.Error("the bytes of a refused header line are shown")
	}
}

// checkShows checks that the inspect output out holds every line of want,
// runs of spaces folded (squash) so that table alignment does not matter.
func checkShows(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(squash(out), squash(w)) {
			t.Errorf("no %q in:\n%s", w, out)
		}
	}
}

// squash folds runs of spaces.
func squash(s string) string {
	return strings.Join(strings.FieldsFunc(s, func(r rune) bool { return r == ' ' }), " ")
}
