package inject

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// FaultSpec is one entry of the faults section: which fault, on which
// upstream, when, and for which requests. Zero values are documented per
// field. In YAML it is decoded in two phases, both strict: this envelope,
// then Params by the fault type's factory (see FaultTypes).
type FaultSpec struct {
	// Name identifies the fault in the journal, metrics and the control
	// API; "" means "<upstream>-<type>" (made unique with a suffix).
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
	// Type is the catalogue entry, one of FaultTypes().
	Type string `yaml:"type" json:"type"`
	// Upstream is the name of the upstream the fault applies to.
	Upstream string `yaml:"upstream" json:"upstream"`
	// At is when the window opens, relative to the run's start (for
	// faults added through the control API: relative to when they are
	// added). 0 means at the start.
	At rehearse.Duration `yaml:"at,omitempty" json:"at,omitempty"`
	// For is the window's length; 0 means until the server closes.
	For rehearse.Duration `yaml:"for,omitempty" json:"for,omitempty"`
	// Match narrows the requests; nil matches every request.
	Match *MatchConfig `yaml:"match,omitempty" json:"match,omitempty"`
	// Probability is the chance that a matching request is faulted, drawn
	// per request from the seed (see Server); 0 means 1 (always).
	Probability float64 `yaml:"probability,omitempty" json:"probability,omitempty"`
	// FirstN limits the fault to the first N matching requests of the
	// window; 0 means no limit.
	FirstN int `yaml:"first_n,omitempty" json:"first_n,omitempty"`
	// EveryNth faults only every Nth matching request (the Nth, 2Nth, ...);
	// 0 means every one.
	EveryNth int `yaml:"every_nth,omitempty" json:"every_nth,omitempty"`
	// HealthChecks also faults the gateway's health-check requests; false
	// (the default) serves them healthy, as a dependency's separate health
	// endpoint often stays up while its API fails.
	HealthChecks bool `yaml:"health_checks,omitempty" json:"health_checks,omitempty"`
	// Params are the type's parameters: a pointer to the type's params
	// struct (*StatusParams, ...), that struct itself, a map decoded from
	// JSON, or nil for the defaults. After YAML decoding it holds the
	// pointer.
	Params any `yaml:"params,omitempty" json:"params,omitempty"`
}

// faultEnvelope is the first decoding phase: params are kept as a node.
type faultEnvelope struct {
	Name         string            `yaml:"name"`
	Type         string            `yaml:"type"`
	Upstream     string            `yaml:"upstream"`
	At           rehearse.Duration `yaml:"at"`
	For          rehearse.Duration `yaml:"for"`
	Match        *MatchConfig      `yaml:"match"`
	Probability  float64           `yaml:"probability"`
	FirstN       int               `yaml:"first_n"`
	EveryNth     int               `yaml:"every_nth"`
	HealthChecks bool              `yaml:"health_checks"`
	Params       yaml.Node         `yaml:"params"`
}

// UnmarshalYAML decodes a fault strictly in two phases: the envelope, then
// the params by the type's factory. Unknown fields, unknown types and
// invalid values are *rehearse.ConfigError with the line and column.
func (f *FaultSpec) UnmarshalYAML(n *yaml.Node) error {
	var env faultEnvelope
	if err := decodeStrict(n, &env, ""); err != nil {
		return err
	}
	if env.Type == "" {
		return errAt(n, "type", fmt.Errorf("missing; allowed: %s", strings.Join(FaultTypes(), ", ")))
	}
	fac, ok := registry[env.Type]
	if !ok {
		return errAt(fieldNode(n, "type"), "type", fmt.Errorf("unknown fault type %q; allowed: %s", env.Type, strings.Join(FaultTypes(), ", ")))
	}
	spec := FaultSpec{
		Name: env.Name, Type: env.Type, Upstream: env.Upstream, At: env.At, For: env.For,
		Match: env.Match, Probability: env.Probability, FirstN: env.FirstN, EveryNth: env.EveryNth,
		HealthChecks: env.HealthChecks,
	}
	params := fac.newParams()
	if env.Params.Kind != 0 {
		if err := decodeStrict(&env.Params, params, "params"); err != nil {
			return err
		}
	}
	spec.Params = params
	if _, err := fac.build(params); err != nil {
		pn := fieldNode(n, "params")
		if pn == nil {
			pn = n
		}
		return errAt(pn, "params", fmt.Errorf("%s: %w", env.Type, err))
	}
	if err := spec.validateEnvelope(); err != nil {
		var ce *rehearse.ConfigError
		if errors.As(err, &ce) && ce.Line == 0 {
			if fn := fieldNode(n, ce.Path); fn != nil {
				ce.Line, ce.Col = fn.Line, fn.Column
			} else {
				ce.Line, ce.Col = n.Line, n.Column
			}
		}
		return err
	}
	*f = spec
	return nil
}

// fieldNode returns the value node of key in mapping n, or nil.
func fieldNode(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	key, _, _ = strings.Cut(key, ".")
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}

// validateEnvelope checks the fields common to every fault.
func (f *FaultSpec) validateEnvelope() error {
	bad := func(field string, err error) error { return &rehearse.ConfigError{Path: field, Err: err} }
	if f.Upstream == "" {
		return bad("upstream", errors.New("missing: name the upstream the fault applies to"))
	}
	if f.At < 0 {
		return bad("at", fmt.Errorf("must not be negative, got %s", f.At))
	}
	if f.For < 0 {
		return bad("for", fmt.Errorf("must not be negative, got %s", f.For))
	}
	if f.Probability < 0 || f.Probability > 1 {
		return bad("probability", fmt.Errorf("want a number between 0 and 1, got %v", f.Probability))
	}
	if f.FirstN < 0 {
		return bad("first_n", fmt.Errorf("must not be negative, got %d", f.FirstN))
	}
	if f.EveryNth < 0 {
		return bad("every_nth", fmt.Errorf("must not be negative, got %d", f.EveryNth))
	}
	if _, err := f.Match.compile(); err != nil {
		return bad("match", err)
	}
	return nil
}

// DecodeFaults decodes a YAML sequence of faults strictly (see
// FaultSpec.UnmarshalYAML).
func DecodeFaults(n *yaml.Node) ([]FaultSpec, error) {
	var out []FaultSpec
	if err := decodeStrict(n, &out, "faults"); err != nil {
		return nil, err
	}
	return out, nil
}

// compile builds the fault from the spec's params, in any of the accepted
// forms.
func (f *FaultSpec) compile() (Fault, error) {
	fac, ok := registry[f.Type]
	if !ok {
		return nil, &rehearse.ConfigError{Path: "type", Err: fmt.Errorf("unknown fault type %q; allowed: %s", f.Type, strings.Join(FaultTypes(), ", "))}
	}
	params, err := fac.params(f.Params)
	if err != nil {
		return nil, &rehearse.ConfigError{Path: "params", Err: fmt.Errorf("%s: %w", f.Type, err)}
	}
	f.Params = params
	if err := f.validateEnvelope(); err != nil {
		return nil, err
	}
	fault, err := fac.build(params)
	if err != nil {
		return nil, &rehearse.ConfigError{Path: "params", Err: fmt.Errorf("%s: %w", f.Type, err)}
	}
	return fault, nil
}

// params converts raw params to the factory's *P.
func (fac factory) params(raw any) (any, error) {
	p := fac.newParams()
	switch v := raw.(type) {
	case nil:
		return p, nil
	case *yaml.Node:
		if err := decodeStrict(v, p, "params"); err != nil {
			return nil, err
		}
		return p, nil
	case map[string]any, json.RawMessage:
		// From JSON (the control API, a journal): re-read through YAML,
		// which is a superset of JSON, to decode strictly.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var n yaml.Node
		if err := yaml.Unmarshal(b, &n); err != nil {
			return nil, err
		}
		if err := decodeStrict(&n, p, "params"); err != nil {
			return nil, err
		}
		return p, nil
	}
	pt := reflect.TypeOf(p)
	rv := reflect.ValueOf(raw)
	switch {
	case rv.Type() == pt:
		return raw, nil
	case reflect.PointerTo(rv.Type()) == pt:
		reflect.ValueOf(p).Elem().Set(rv)
		return p, nil
	}
	return nil, fmt.Errorf("params must be %s, got %T", pt, raw)
}

// UnmarshalJSON decodes a fault from JSON (the control API), with the same
// strictness as YAML.
func (f *FaultSpec) UnmarshalJSON(b []byte) error {
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		return &rehearse.ConfigError{Err: fmt.Errorf("not valid JSON: %w", err)}
	}
	if len(n.Content) == 0 {
		return &rehearse.ConfigError{Err: errors.New("empty fault")}
	}
	return f.UnmarshalYAML(n.Content[0])
}
