package scenarios

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDigestNamesTheDrillNotTheGateway(t *testing.T) {
	const base = `
name: $NAME
seed: $SEED
gateway:
  builtin:
    config:
      breaker: {probe_interval: $PROBE}
replay:
  rate: $RATE
  duration: 9s
  capture: $CAPTURE
faults:
  - {name: storm, type: status, upstream: search, at: $AT, for: 3s, params: {code: 503}}
expectations:
  opens_within: $WITHIN
`
	dir := t.TempDir()
	capA := filepath.Join(dir, "a.pcapng")
	capB := filepath.Join(dir, "sub", "b.pcapng")
	capC := filepath.Join(dir, "c.pcapng")
	data, err := os.ReadFile("captures/agent-gateway.pcapng")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(capB), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, b := range map[string][]byte{capA: data, capB: data, capC: append([]byte(nil), data[:len(data)-1]...)} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	digest := func(kv ...string) string {
		t.Helper()
		vals := map[string]string{"NAME": "storm", "SEED": "1", "PROBE": "400ms", "RATE": "20", "AT": "1s", "WITHIN": "5s", "CAPTURE": capA}
		for i := 0; i < len(kv); i += 2 {
			vals[kv[i]] = kv[i+1]
		}
		src := base
		for k, v := range vals {
			src = strings.ReplaceAll(src, "$"+k, v)
		}
		s, err := Parse(filepath.Join(dir, "s.yaml"), []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		d, err := s.Digest()
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ref := digest()
	if !strings.HasPrefix(ref, DigestPrefix) || len(ref) != len(DigestPrefix)+64 {
		t.Fatalf("digest %q", ref)
	}
	for _, c := range []struct {
		name string
		kv   []string
		same bool
	}{
		{"again", nil, true},
		{"another probe interval (gateway config)", []string{"PROBE", "460ms"}, true},
		{"another name and seed", []string{"NAME", "other", "SEED", "7"}, true},
		{"other expectations", []string{"WITHIN", "9s"}, true},
		{"same capture bytes under another path", []string{"CAPTURE", capB}, true},
		{"another capture", []string{"CAPTURE", capC}, false},
		{"another rate", []string{"RATE", "10"}, false},
		{"the fault at another time", []string{"AT", "2s"}, false},
		{"the fixed schedule written out", []string{"RATE", "20\n  schedule: fixed"}, true},
		{"response headers kept in the journal", []string{"RATE", "20\n  keep_headers: [X-Chosen-Target]"}, true},
		{"a Poisson schedule", []string{"RATE", "20\n  schedule: poisson"}, false},
		{"a jittered schedule", []string{"RATE", "20\n  schedule: jittered"}, false},
	} {
		if got := digest(c.kv...); (got == ref) != c.same {
			t.Errorf("%s: digest %s vs %s, want same=%v", c.name, got, ref, c.same)
		}
	}
}

// TestDigestFixedScheduleUnchanged pins the digest of a drill on the
// fixed schedule to the one it had before replay.schedule existed
// (computed on main at 5af14e1), so that runs recorded before and after
// still compare as the same drill.
func TestDigestFixedScheduleUnchanged(t *testing.T) {
	const before = "sha256:703c59b2b9d0440c6c11a336648b299cca7037465f7a0cb1fc60e43068ce5eff"
	for _, src := range []string{"replay: {duration: 9s, rate: 5}\n", "replay: {duration: 9s, rate: 5, schedule: fixed}\n"} {
		s, err := Parse("a.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		if d, err := s.Digest(); err != nil || d != before {
			t.Errorf("%q: digest %s (%v), want %s as before schedules", src, d, err, before)
		}
	}
}

func TestDigestDefaultsWrittenOrNot(t *testing.T) {
	implicit, err := Parse("a.yaml", []byte("replay: {duration: 9s}\n"))
	if err != nil {
		t.Fatal(err)
	}
	explicit, err := Parse("b.yaml", []byte("replay: {duration: 9s, rate: 10, capture: \"builtin:agent-gateway\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := implicit.Digest()
	if err != nil {
		t.Fatal(err)
	}
	b, err := explicit.Digest()
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("defaults written out change the digest: %s vs %s", a, b)
	}
	w, err := Builtin("weekly")
	if err != nil {
		t.Fatal(err)
	}
	if d, err := w.Digest(); err != nil || d == a {
		t.Errorf("weekly digest %s (%v) equals a 9 s drill's", d, err)
	}
}
