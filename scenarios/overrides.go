package scenarios

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/replay"
)

// Overrides are the command-line values that win over a scenario file
// (rehearse run --gateway, --rate, --schedule, --duration, --seed,
// --gateway-mode).
// Each is a flag value (it implements pflag.Value): the CLI binds every
// one of Flags, and Apply changes the scenario by the flags that were
// given, and only by those. A flag never given leaves the file's value, so
// "--rate 0" is an error rather than "no override", and the file's seed is
// kept unless --seed is given.
//
// The zero value has no flags; use NewOverrides.
type Overrides struct {
	flags []*Override
}

// An Override is one command-line value: its flag's name and help, and
// how it changes a scenario. Set checks the value on its own (so a bad
// value is a flag error, before any file is read); Apply checks it against
// the scenario.
type Override struct {
	// Name is the flag's name, without dashes; Usage its help.
	Name, Usage string
	// path is the scenario key the flag sets: validation errors about
	// it name the flag.
	path string
	// typ is pflag's type name, shown in the help ("float64" reads as
	// "float").
	typ string
	// raw is the value given; given says whether Set was called.
	raw   string
	given bool
	// parse checks a value and returns what it does to a scenario.
	parse func(raw string) (func(*Scenario) error, error)
	apply func(*Scenario) error
}

// NewOverrides returns the overrides, none given, in the order Apply
// applies them: --gateway before --gateway-mode, so that a mode given for
// a scenario whose gateway --gateway replaced is an error, not ignored.
func NewOverrides() *Overrides {
	return &Overrides{flags: []*Override{
		{Name: "gateway", path: "gateway.url", typ: "string", Usage: "base URL of the gateway under test (replaces the scenario's gateway)", parse: parseGatewayOverride},
		{Name: "rate", path: "replay.rate", typ: "float64", Usage: "requests per second (default: the scenario's)", parse: parseRateOverride},
		{Name: "schedule", path: "replay.schedule", typ: "string", Usage: "where the sends of the rate fall: fixed, poisson or jittered (default: the scenario's, else fixed)", parse: parseScheduleOverride},
		{Name: "duration", path: "replay.duration", typ: "duration", Usage: "replay duration, e.g. 30s, 5m (default: the scenario's)", parse: parseDurationOverride},
		{Name: "seed", path: "seed", typ: "int64", Usage: fmt.Sprintf("seed of every random decision (default: the scenario's, else %d)", DefaultSeed), parse: parseSeedOverride},
		{Name: "gateway-mode", path: "gateway.builtin.config.mode", typ: "string", Usage: "built-in gateway mode: reference or naive (fixed 200ms retries ×3, no deadline, no breaker), to compare the two", parse: parseModeOverride},
	}}
}

// Flags returns the overrides, to bind one flag each.
func (o *Overrides) Flags() []*Override { return o.flags }

// Set gives the override a value from the command line (pflag.Value).
func (f *Override) Set(raw string) error {
	apply, err := f.parse(raw)
	if err != nil {
		return err
	}
	f.raw, f.given, f.apply = raw, true, apply
	return nil
}

// String is the value given, "" when none (pflag.Value).
func (f *Override) String() string { return f.raw }

// Type is the value's type name for the help (pflag.Value).
func (f *Override) Type() string { return f.typ }

// Given reports whether the flag was given.
func (f *Override) Given() bool { return f.given }

// Apply changes s by the overrides given, in order, then validates it.
func (o *Overrides) Apply(s *Scenario) error {
	for _, f := range o.flags {
		if !f.given {
			continue
		}
		if err := f.apply(s); err != nil {
			return fmt.Errorf("%w: --%s: %w", rehearse.ErrInvalid, f.Name, err)
		}
		if s.flags == nil {
			s.flags = map[string]string{}
		}
		s.flags[f.path] = f.Name
	}
	return s.Validate()
}

func parseGatewayOverride(raw string) (func(*Scenario) error, error) {
	u, err := rehearse.ParseHTTPURL(raw)
	if err != nil {
		return nil, err
	}
	base := strings.TrimRight(raw, "/")
	// The observers' endpoints sit under the gateway's path; the query
	// and fragment of the gateway URL belong to neither (appending to the
	// raw string put "/metrics" inside a query).
	endpoint := func(name string) string {
		e := *u
		e.RawQuery, e.ForceQuery, e.Fragment, e.RawFragment = "", false, "", ""
		return e.JoinPath(name).String()
	}
	return func(s *Scenario) error {
		s.Gateway.URL = base
		if s.Gateway.Builtin != nil {
			// The built-in gateway's observers follow the new URL.
			s.Gateway.Builtin = nil
			if m := s.Gateway.Metrics; m != nil && m.URL == "" {
				m.URL = endpoint("metrics")
			}
			if h := s.Gateway.Health; h != nil && h.URL == "" {
				h.URL = endpoint("healthz")
			}
		}
		return nil
	}, nil
}

func parseRateOverride(raw string) (func(*Scenario) error, error) {
	v, err := strconv.ParseFloat(raw, 64)
	if err != nil {
		return nil, fmt.Errorf("want a number of requests per second, got %q", raw)
	}
	if !(v > 0) || math.IsInf(v, 0) {
		return nil, fmt.Errorf("must be a positive number of requests per second, got %s", raw)
	}
	return func(s *Scenario) error {
		if s.Replay.Timing != "" && s.Replay.Timing != replay.TimingRate {
			// A rate the replay would not use is refused rather than
			// ignored: the run would not be the one asked for.
			return fmt.Errorf("the scenario replays with timing %q; a rate applies to timing %q", s.Replay.Timing, replay.TimingRate)
		}
		s.Replay.Rate = v
		return nil
	}, nil
}

func parseScheduleOverride(raw string) (func(*Scenario) error, error) {
	if !slices.Contains(replay.Schedules(), raw) {
		return nil, fmt.Errorf("want one of %s, got %q", strings.Join(replay.Schedules(), ", "), raw)
	}
	return func(s *Scenario) error {
		if s.Replay.Timing != "" && s.Replay.Timing != replay.TimingRate {
			return fmt.Errorf("the scenario replays with timing %q; a schedule applies to timing %q", s.Replay.Timing, replay.TimingRate)
		}
		s.Replay.Schedule = raw
		return nil
	}, nil
}

func parseDurationOverride(raw string) (func(*Scenario) error, error) {
	d, err := time.ParseDuration(raw)
	if err != nil {
		return nil, fmt.Errorf("want a duration such as 30s or 5m, got %q", raw)
	}
	if d <= 0 {
		return nil, fmt.Errorf("must be positive, got %s", raw)
	}
	return func(s *Scenario) error {
		s.Replay.Duration = rehearse.Duration(d)
		return nil
	}, nil
}

func parseSeedOverride(raw string) (func(*Scenario) error, error) {
	seed, err := strconv.ParseInt(raw, 0, 64)
	if errors.Is(err, strconv.ErrRange) {
		// As the file's seed: out of range is said so, never clamped.
		return nil, fmt.Errorf("out of range: want an integer from %d to %d, got %s", math.MinInt64, math.MaxInt64, raw)
	}
	if err != nil {
		return nil, fmt.Errorf("want a whole number, got %q", raw)
	}
	return func(s *Scenario) error {
		s.Seed = &seed
		return nil
	}, nil
}

func parseModeOverride(raw string) (func(*Scenario) error, error) {
	if raw != gateway.ModeReference && raw != gateway.ModeNaive {
		return nil, fmt.Errorf("want %q or %q, got %q", gateway.ModeReference, gateway.ModeNaive, raw)
	}
	return func(s *Scenario) error {
		if s.Gateway.Builtin == nil {
			return fmt.Errorf("applies to the built-in gateway; this scenario tests %s", s.Gateway.URL)
		}
		s.Gateway.Builtin.Config.Mode = raw
		if raw != gateway.ModeReference {
			// The run is named for the mode, so that the two runs of one
			// drill are told apart in the archive and in compare.
			s.Name += "-" + raw
		}
		return nil
	}, nil
}
