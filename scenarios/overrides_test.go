package scenarios

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
)

// override sets the named flags of a fresh Overrides, as the command line
// would, in the order given.
func override(t *testing.T, flags ...string) *Overrides {
	t.Helper()
	o := NewOverrides()
	for i := 0; i < len(flags); i += 2 {
		var f *Override
		for _, c := range o.Flags() {
			if c.Name == flags[i] {
				f = c
			}
		}
		if f == nil {
			t.Fatalf("no override named %q", flags[i])
		}
		if err := f.Set(flags[i+1]); err != nil {
			t.Fatalf("--%s %s: %v", flags[i], flags[i+1], err)
		}
	}
	return o
}

func parseT(t *testing.T, yaml string) *Scenario {
	t.Helper()
	s, err := Parse("test.yaml", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOverridesNoneGivenKeepsTheFile(t *testing.T) {
	s := parseT(t, "name: keep\nseed: 42\nreplay: {rate: 3, duration: 40s}\n")
	if err := NewOverrides().Apply(s); err != nil {
		t.Fatal(err)
	}
	if *s.Seed != 42 || s.Replay.Rate != 3 || s.Replay.Duration.D() != 40*time.Second || s.Gateway.Builtin == nil || s.Name != "keep" {
		t.Fatalf("the file's values changed with no flag given: seed %d rate %g duration %s builtin %v name %q",
			*s.Seed, s.Replay.Rate, s.Replay.Duration.D(), s.Gateway.Builtin, s.Name)
	}
}

func TestOverridesGivenWin(t *testing.T) {
	s := parseT(t, "seed: 42\nreplay: {rate: 3, duration: 40s}\n")
	// --seed 0 is a seed like any other: given, it wins over the file's.
	if err := override(t, "rate", "0.5", "duration", "2m", "seed", "0").Apply(s); err != nil {
		t.Fatal(err)
	}
	if *s.Seed != 0 || s.Replay.Rate != 0.5 || s.Replay.Duration.D() != 2*time.Minute {
		t.Fatalf("seed %d rate %g duration %s", *s.Seed, s.Replay.Rate, s.Replay.Duration.D())
	}
}

func TestOverrideGatewayReplacesTheBuiltin(t *testing.T) {
	s := parseT(t, "{}")
	if err := override(t, "gateway", "http://127.0.0.1:8080/").Apply(s); err != nil {
		t.Fatal(err)
	}
	g := s.Gateway
	if g.Builtin != nil || g.URL != "http://127.0.0.1:8080" || g.Metrics.URL != "http://127.0.0.1:8080/metrics" || g.Health.URL != "http://127.0.0.1:8080/healthz" {
		t.Fatalf("gateway %+v metrics %+v health %+v", g, g.Metrics, g.Health)
	}
}

func TestOverrideGatewayEndpointsUnderItsPath(t *testing.T) {
	// The observers' endpoints go under the gateway's path, never into its
	// query.
	s := parseT(t, "{}")
	if err := override(t, "gateway", "http://127.0.0.1:8080/gw/?tenant=a").Apply(s); err != nil {
		t.Fatal(err)
	}
	g := s.Gateway
	if g.Metrics.URL != "http://127.0.0.1:8080/gw/metrics" || g.Health.URL != "http://127.0.0.1:8080/gw/healthz" {
		t.Fatalf("metrics %q health %q, want both under /gw/ without the query", g.Metrics.URL, g.Health.URL)
	}
}

func TestOverrideGatewayMode(t *testing.T) {
	s := parseT(t, "name: storm\n")
	if err := override(t, "gateway-mode", gateway.ModeNaive).Apply(s); err != nil {
		t.Fatal(err)
	}
	if s.Gateway.Builtin.Config.Mode != gateway.ModeNaive || s.Name != "storm-naive" {
		t.Fatalf("mode %q name %q", s.Gateway.Builtin.Config.Mode, s.Name)
	}
	s = parseT(t, "name: storm\n")
	if err := override(t, "gateway-mode", gateway.ModeReference).Apply(s); err != nil || s.Name != "storm" {
		t.Fatalf("reference mode: name %q, %v", s.Name, err)
	}
	// Whatever the order on the command line, --gateway is applied first:
	// the mode of a gateway that is not run is refused, not ignored.
	for _, flags := range [][]string{
		{"gateway", "http://127.0.0.1:8080", "gateway-mode", "naive"},
		{"gateway-mode", "naive", "gateway", "http://127.0.0.1:8080"},
	} {
		err := override(t, flags...).Apply(parseT(t, "{}"))
		if !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), "--gateway-mode: applies to the built-in gateway") {
			t.Errorf("%v: %v", flags, err)
		}
	}
}

func TestOverrideBadValues(t *testing.T) {
	for _, c := range []struct{ name, value, want string }{
		{"rate", "0", "must be a positive number"},
		{"rate", "-1", "must be a positive number"},
		{"rate", "NaN", "must be a positive number"},
		{"rate", "+Inf", "must be a positive number"},
		{"rate", "fast", "want a number"},
		{"duration", "0s", "must be positive"},
		{"duration", "-5m", "must be positive"},
		{"duration", "5", "want a duration"},
		{"seed", "1.5", "want a whole number"},
		{"gateway", "127.0.0.1:8080", "invalid URL"},
		{"gateway", "ftp://h/", "want an absolute http:// or https:// URL"},
		{"gateway", "http://admin:s3cret@h:x/", "REDACTED"},
		{"gateway-mode", "fancy", `want "reference" or "naive"`},
	} {
		o := NewOverrides()
		for _, f := range o.Flags() {
			if f.Name != c.name {
				continue
			}
			err := f.Set(c.value)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("--%s %s: %v, want %q", c.name, c.value, err, c.want)
			}
			if f.Given() {
				t.Errorf("--%s %s: a refused value counts as given", c.name, c.value)
			}
		}
	}
}

func TestOverrideRateNeedsRateTiming(t *testing.T) {
	s := parseT(t, "replay: {timing: original}\n")
	err := override(t, "rate", "20").Apply(s)
	if !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), `--rate: the scenario replays with timing "original"`) {
		t.Fatalf("%v", err)
	}
}

func TestOverrideResultIsValidated(t *testing.T) {
	// A value fine on its own but not for this scenario: the scenario's
	// own validation says so.
	s := parseT(t, "replay: {rate: 3}\n")
	err := override(t, "rate", "200000").Apply(s)
	if !errors.Is(err, rehearse.ErrInvalid) || !strings.HasPrefix(err.Error(), "--rate: ") {
		t.Fatalf("%v", err)
	}
}

// TestOverrideErrorNamesTheFlag: a value given on the command line that
// validation refuses is reported as the flag, not at the line and column
// of the file's value it replaced (which is not what is wrong).
func TestOverrideErrorNamesTheFlag(t *testing.T) {
	s := parseT(t, "version: 1\nreplay:\n  rate: 5\n")
	err := override(t, "rate", "200000").Apply(s)
	want := "--rate: want a rate between 0 and 100000 requests per second, got 200000"
	if err == nil || err.Error() != want || !errors.Is(err, rehearse.ErrInvalid) {
		t.Fatalf("error %v, want %s", err, want)
	}
	// An error about a key of the file keeps its place, also when a
	// flag's value is what makes it wrong.
	s = parseT(t, "version: 1\nfaults:\n  - {type: status, upstream: search, at: 30s, params: {code: 503}}\n")
	err = override(t, "duration", "20s").Apply(s)
	want = "test.yaml:3:42: faults[0].at: the fault starts at 30s but the replay ends at 20s"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}

// TestSeedFlagOutOfRange: a --seed beyond int64 says so, as the file's
// seed does, instead of "want a whole number" for a whole number.
func TestSeedFlagOutOfRange(t *testing.T) {
	var seed *Override
	for _, f := range NewOverrides().Flags() {
		if f.Name == "seed" {
			seed = f
		}
	}
	err := seed.Set("99999999999999999999")
	want := "out of range: want an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
	if err := seed.Set("-9223372036854775808"); err != nil {
		t.Fatalf("the least int64: %v", err)
	}
}

func TestOverrideSchedule(t *testing.T) {
	s := parseT(t, "replay: {rate: 5, duration: 40s}\n")
	if err := override(t, "schedule", "jittered").Apply(s); err != nil || s.Replay.Schedule != "jittered" {
		t.Fatalf("--schedule jittered: schedule %q (%v)", s.Replay.Schedule, err)
	}
	o := NewOverrides()
	for _, f := range o.Flags() {
		if f.Name == "schedule" {
			if err := f.Set("bursty"); err == nil || !strings.Contains(err.Error(), "fixed, poisson, jittered") {
				t.Errorf("--schedule bursty: %v", err)
			}
		}
	}
	// A schedule the replay would not use is refused, not ignored.
	orig := parseT(t, "replay: {timing: original, once: true}\n")
	err := override(t, "schedule", "poisson").Apply(orig)
	if !errors.Is(err, rehearse.ErrInvalid) || !strings.Contains(err.Error(), "--schedule: the scenario replays with timing \"original\"") {
		t.Errorf("--schedule on timing original: %v", err)
	}
}
