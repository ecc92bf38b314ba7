// Package yamlstrict decodes YAML nodes into Go config structs strictly:
// unknown keys, duplicate keys and values of the wrong kind are errors at
// their own line and column, with the allowed keys listed. yaml.v3's
// KnownFields neither reaches into Node.Decode nor into custom
// unmarshalers, and its errors carry no column; every config type of the
// harness (scenarios, inject's upstreams and faults) is decoded by this one
// walker instead.
package yamlstrict

import (
	"encoding"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// Pos is a place in the file.
type Pos struct{ Line, Col int }

// MaxVisits bounds the nodes one Decode visits, against alias bombs.
const MaxVisits = 1_000_000

// Decoder walks a node tree. The zero value stops at the first error,
// records no positions and replaces what it decodes.
type Decoder struct {
	// File names the source in errors.
	File string
	// All collects every error instead of stopping at the first, so a user
	// can fix a file in one pass.
	All bool
	// Merge decodes over what the target already holds: a map entry the
	// file names again is decoded over its present value instead of
	// replacing it, so that a file can change one field of a default
	// entry. (Struct fields and pointers are always decoded in place.)
	Merge bool
	// Positions, when non-nil, receives the position of every value
	// decoded, by path, so that later validation can point into the file.
	Positions map[string]Pos

	errs   rehearse.ConfigErrors
	visits int
}

var errStop = errors.New("stop")

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
)

// Decode fills out (a non-nil pointer) from n; path prefixes every path.
// It returns the errors found (all of them with All, else the first), each
// a *rehearse.ConfigError with the file, line and column of the offending
// node.
func (d *Decoder) Decode(n *yaml.Node, out any, path string) rehearse.ConfigErrors {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		panic(fmt.Sprintf("yamlstrict: Decode wants a non-nil pointer, got %T", out))
	}
	d.errs, d.visits = nil, 0
	_ = d.value(n, v.Elem(), path)
	return d.errs
}

func (d *Decoder) fail(n *yaml.Node, path string, err error) error {
	e := &rehearse.ConfigError{File: d.File, Path: path, Err: err}
	if n != nil {
		e.Line, e.Col = n.Line, n.Column
	}
	// A type that decodes itself with a nested strict decoding (inject's
	// fault specs) reports its own place, with a path relative to its node.
	if ce, ok := errors.AsType[*rehearse.ConfigError](err); ok {
		if ce.Line > 0 {
			e.Line, e.Col = ce.Line, ce.Col
		}
		e.Path, e.Err = JoinPath(path, ce.Path), ce.Err
	}
	d.errs = append(d.errs, e)
	if !d.All {
		return errStop
	}
	return nil
}

func (d *Decoder) value(n *yaml.Node, v reflect.Value, path string) error {
	if d.visits++; d.visits > MaxVisits {
		return d.fail(n, path, errors.New("document too large or too many aliases"))
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if d.Positions != nil && path != "" {
		d.Positions[path] = Pos{n.Line, n.Column}
	}
	t := v.Type()
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return nil
	}
	// Types that decode themselves (durations, inject's fault specs).
	if v.CanAddr() && (reflect.PointerTo(t).Implements(yamlUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		if n.Tag == "!!null" {
			return nil
		}
		d.recordPositions(n, path)
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return d.fail(n, path, cleanYAMLError(err))
		}
		return nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			return nil
		}
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.value(n, v.Elem(), path)
	case reflect.Struct:
		return d.structValue(n, v, path)
	case reflect.Slice:
		if n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, path, fmt.Errorf("want a list, got %s", Describe(n)))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := d.value(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	case reflect.Map:
		if n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.MappingNode {
			return d.fail(n, path, fmt.Errorf("want a mapping, got %s", Describe(n)))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			kp := JoinPath(path, kn.Value)
			if seen[kn.Value] {
				if err := d.fail(kn, kp, errors.New("duplicate key")); err != nil {
					return err
				}
				continue
			}
			seen[kn.Value] = true
			key := reflect.New(t.Key()).Elem()
			if err := d.value(kn, key, kp+"(key)"); err != nil {
				return err
			}
			val := reflect.New(t.Elem()).Elem()
			if old := v.MapIndex(key); d.Merge && old.IsValid() {
				val.Set(old)
			}
			if err := d.value(vn, val, kp); err != nil {
				return err
			}
			v.SetMapIndex(key, val)
		}
		return nil
	case reflect.Interface:
		// An interface that already holds a pointer (a fault's params
		// struct, chosen by its type) is decoded into strictly.
		if !v.IsNil() && v.Elem().Kind() == reflect.Pointer && !v.Elem().IsNil() {
			return d.value(n, v.Elem().Elem(), path)
		}
		var x any
		if err := n.Decode(&x); err != nil {
			return d.fail(n, path, cleanYAMLError(err))
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return d.fail(n, path, fmt.Errorf("want %s, got %s", KindName(t), Describe(n)))
		}
		if err := scalar(n, v); err != nil {
			return d.fail(n, path, err)
		}
		return nil
	}
}

// scalar decodes a plain value strictly. yaml.v3 alone lets through what
// later breaks a run or silently changes it: .nan and .inf in a float (a
// rate of NaN passes every "< 0" check and then cannot be written to the
// journal), a fraction in an integer (1.5 becomes 1), and an integer just
// beyond int64 written as -9223372036854775809 or 9223372036854775807.0,
// which it resolves as a float and wraps or clamps. Every number of every
// config passes here, so no field can forget the check.
func scalar(n *yaml.Node, v reflect.Value) error {
	t := v.Type()
	want := fmt.Errorf("want %s, got %q", KindName(t), n.Value)
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		switch n.Tag {
		case "!!int":
			if n.Decode(v.Addr().Interface()) != nil {
				// The text is an integer (yaml.v3 resolved it as one)
				// that does not fit this field.
				return outOfRange(n, t)
			}
			return nil
		case "!!float":
			if integerText.MatchString(n.Value) {
				// yaml.v3 resolves an integer too large for 64 bits
				// as a float.
				return outOfRange(n, t)
			}
		}
		return want
	case reflect.Float32, reflect.Float64:
		if n.Decode(v.Addr().Interface()) != nil {
			return want
		}
		if f := v.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("want a finite number, got %s", n.Value)
		}
		return nil
	}
	if n.Decode(v.Addr().Interface()) != nil {
		return want
	}
	return nil
}

// integerText is a decimal integer as YAML writes one.
var integerText = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

// outOfRange says which integers a field holds.
func outOfRange(n *yaml.Node, t reflect.Type) error {
	bits := t.Bits()
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return fmt.Errorf("out of range: want an integer from 0 to %d, got %s", uint64(1)<<bits-1, n.Value)
	}
	return fmt.Errorf("out of range: want an integer from %d to %d, got %s", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1, n.Value)
}

func (d *Decoder) structValue(n *yaml.Node, v reflect.Value, path string) error {
	if n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return d.fail(n, path, fmt.Errorf("want a mapping, got %s", Describe(n)))
	}
	fields := Fields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		fp := JoinPath(path, key)
		idx, ok := fields[key]
		if !ok {
			if err := d.fail(kn, fp, fmt.Errorf("unknown field %q; allowed: %s", key, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))); err != nil {
				return err
			}
			continue
		}
		if seen[key] {
			if err := d.fail(kn, fp, errors.New("duplicate key")); err != nil {
				return err
			}
			continue
		}
		seen[key] = true
		if err := d.value(vn, v.FieldByIndex(idx), fp); err != nil {
			return err
		}
	}
	return nil
}

// recordPositions notes where every key below n is, for types that decode
// themselves, so that later validation can still point into them.
func (d *Decoder) recordPositions(n *yaml.Node, path string) {
	if d.Positions == nil {
		return
	}
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := JoinPath(path, n.Content[i].Value)
			v := n.Content[i+1]
			d.Positions[p] = Pos{v.Line, v.Column}
			d.recordPositions(v, p)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.Positions[p] = Pos{item.Line, item.Column}
			d.recordPositions(item, p)
		}
	}
}

// Fields maps a struct type's YAML keys to field indexes; fields without a
// yaml tag use their lower-cased name, "-" fields are skipped, ",inline"
// structs contribute their own keys.
func Fields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			for k, idx := range Fields(f.Type) {
				out[k] = append([]int{i}, idx...)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out[name] = []int{i}
	}
	return out
}

// JoinPath appends key to a dotted path.
func JoinPath(parent, key string) string { return rehearse.JoinPath(parent, key) }

// Describe names a node's kind for messages.
func Describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	}
	return "nothing"
}

// KindName says what a Go kind wants, for messages.
func KindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	}
	return t.String()
}

// cleanYAMLError strips yaml.v3's "yaml: unmarshal errors:\n  line N:"
// wrapping; the position is reported by the Error.
func cleanYAMLError(err error) error {
	var te *yaml.TypeError
	if errors.As(err, &te) && len(te.Errors) > 0 {
		msg := te.Errors[0]
		if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "line ") && i > 0 {
			msg = msg[i+2:]
		}
		return errors.New(msg)
	}
	return err
}

// ErrEmpty is returned by ParseDocument for input that holds no YAML
// document; callers say what they wanted instead.
var ErrEmpty = errors.New("empty document")

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// ParseDocument parses data, which must hold exactly one YAML document,
// into a node tree for Decode. Syntax errors are *rehearse.ConfigError at
// their line; empty input is a *rehearse.ConfigError wrapping ErrEmpty.
func ParseDocument(file string, data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &rehearse.ConfigError{File: file, Err: ErrEmpty}
		}
		return nil, syntaxError(file, err)
	}
	if len(doc.Content) == 0 {
		return nil, &rehearse.ConfigError{File: file, Err: ErrEmpty}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &rehearse.ConfigError{File: file, Line: extra.Line, Col: extra.Column, Err: errors.New("more than one YAML document; the file holds one")}
	}
	return &doc, nil
}

// syntaxError turns a yaml.v3 syntax error into a ConfigError at its line.
func syntaxError(file string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		problem := m[2]
		// yaml.v3 reports a collection that does not end at the line
		// where that collection starts: zero-based for a flow collection
		// or a block sequence, one-based for a block mapping. Convert to
		// one-based and say what the line is.
		switch {
		case strings.HasPrefix(problem, "did not find expected ','"),
			strings.HasPrefix(problem, "did not find expected '-'"):
			line++
			problem += " (in the mapping or list that starts on this line)"
		case strings.HasPrefix(problem, "did not find expected key"):
			problem += " (in the mapping that starts on this line)"
		}
		return &rehearse.ConfigError{File: file, Line: line, Err: fmt.Errorf("invalid YAML: %s", problem)}
	}
	return &rehearse.ConfigError{File: file, Err: fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))}
}
