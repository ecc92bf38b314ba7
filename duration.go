package rehearse

import (
	"encoding/json"
	"fmt"
	"time"

	"go.yaml.in/yaml/v3"
)

// Duration is a time.Duration written as a Go duration string ("250ms",
// "5m", "1h30m") in YAML and JSON files, never as a bare number, so that a
// file always says its unit. Every config type of the harness uses it.
type Duration time.Duration

// D returns d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// String formats d like time.Duration.
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalText implements encoding.TextMarshaler.
func (d Duration) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler.
func (d *Duration) UnmarshalText(b []byte) error {
	v, err := ParseDuration(string(b))
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalJSON reads a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"250ms\" or \"5m\", got %s", b)
	}
	return d.UnmarshalText([]byte(s))
}

// UnmarshalYAML reads a duration string; a bare number is an error that says
// which unit to add.
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!int" || n.Tag == "!!float" {
		return fmt.Errorf("duration must be a string with a unit such as \"250ms\", \"30s\" or \"5m\", got %q", n.Value)
	}
	return d.UnmarshalText([]byte(n.Value))
}

// ParseDuration parses a Go duration string; negative durations are refused.
func ParseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: want a number with a unit such as \"250ms\", \"30s\" or \"5m\"", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("invalid duration %q: must not be negative", s)
	}
	return Duration(v), nil
}
