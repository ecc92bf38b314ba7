package inject

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// FaultSpec is one entry of the faults section: which fault, on which
// upstream, when, and for which requests. Zero values are documented per
// field. It is decoded strictly in one pass, its params into the type's own
// params struct, and the fault is built once, when it is decoded (or, for a
// spec made in Go, when it is added to a server).
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
	// struct (*StatusParams, ... see NewParams), or nil for the defaults.
	// Decoding sets it to that pointer.
	Params any `yaml:"params,omitempty" json:"params,omitempty"`

	// fault is the fault built from Params by decoding, so that it is
	// built (and its params checked) once.
	fault Fault
}

// UnmarshalYAML decodes a fault strictly in one pass: the type names the
// params struct, which the walker then decodes like any other field. The
// fault is built at once, so that invalid params are reported at their
// place. Errors are *rehearse.ConfigError with the line and column.
func (f *FaultSpec) UnmarshalYAML(n *yaml.Node) error {
	type plain FaultSpec // the fields, without this method
	var p plain
	if n.Kind == yaml.MappingNode {
		tn := fieldNode(n, "type")
		switch {
		case tn == nil:
			return errAt(n, "type", fmt.Errorf("missing; allowed: %s", strings.Join(FaultTypes(), ", ")))
		case registry[tn.Value].newParams == nil:
			return errAt(tn, "type", fmt.Errorf("unknown fault type %q; allowed: %s", tn.Value, strings.Join(FaultTypes(), ", ")))
		}
		p.Params = registry[tn.Value].newParams()
	}
	if err := decodeStrict(n, &p, ""); err != nil {
		return err
	}
	spec := FaultSpec(p)
	fault, err := spec.compile()
	if err != nil {
		if ce, ok := errors.AsType[*rehearse.ConfigError](err); ok && ce.Line == 0 {
			at := fieldNode(n, ce.Path)
			if at == nil {
				at = n
			}
			ce.Line, ce.Col = at.Line, at.Column
		}
		return err
	}
	spec.fault = fault
	*f = spec
	return nil
}

// UnmarshalJSON decodes a fault from JSON (the control API, a journal)
// with the same strict walker as YAML: JSON is YAML, and errors carry the
// line and column in the JSON text.
func (f *FaultSpec) UnmarshalJSON(b []byte) error {
	doc, err := yamlstrict.ParseDocument("", b)
	if errors.Is(err, yamlstrict.ErrEmpty) {
		return &rehearse.ConfigError{Err: errors.New("empty fault")}
	}
	if err != nil {
		return err
	}
	return f.UnmarshalYAML(doc.Content[0])
}

// fieldNode returns the value node of key (its first dotted part) in
// mapping n, or nil.
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
	if err := rehearse.CheckName(f.Name); err != nil {
		return bad("name", err)
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

// compile checks the spec and returns its fault: the one built when it
// was decoded, or, for a spec made in Go, one built from its params now.
// Params must be nil or a pointer to the type's params struct; nil is
// replaced by the defaults.
func (f *FaultSpec) compile() (Fault, error) {
	fac, ok := registry[f.Type]
	if !ok {
		return nil, &rehearse.ConfigError{Path: "type", Err: fmt.Errorf("unknown fault type %q; allowed: %s", f.Type, strings.Join(FaultTypes(), ", "))}
	}
	if f.Params == nil {
		f.Params = fac.newParams()
	}
	if want := reflect.TypeOf(fac.newParams()); reflect.TypeOf(f.Params) != want {
		return nil, &rehearse.ConfigError{Path: "params", Err: fmt.Errorf("%s: params must be %s, got %T", f.Type, want, f.Params)}
	}
	if err := f.validateEnvelope(); err != nil {
		return nil, err
	}
	if f.fault != nil {
		return f.fault, nil
	}
	fault, err := fac.build(f.Params)
	if err != nil {
		return nil, &rehearse.ConfigError{Path: "params", Err: fmt.Errorf("%s: %w", f.Type, err)}
	}
	return fault, nil
}
