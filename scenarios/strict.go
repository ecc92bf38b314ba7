package scenarios

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
)

// ValidationError is an error in a scenario file, with its position.
// Line and Col are 1-based; zero when the error is not tied to a place in
// the file (a missing required section is reported at its parent).
type ValidationError struct {
	File string
	Line int
	Col  int
	// Path is the dotted path of the offending key, e.g. "faults[1].type".
	Path string
	Err  error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("scenario")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ValidationError) Unwrap() error { return e.Err }

// Is makes every ValidationError an invalid-input error (exit code 2).
func (e *ValidationError) Is(target error) bool { return target == rehearse.ErrInvalid }

// Errors is a list of validation errors, reported together so a user can fix
// a file in one pass.
type Errors []*ValidationError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Is makes Errors an invalid-input error (exit code 2).
func (es Errors) Is(target error) bool { return target == rehearse.ErrInvalid }

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// pos is a place in the file.
type pos struct{ line, col int }

// decoder decodes a YAML node tree into Go values strictly: unknown keys,
// duplicate keys and wrong kinds are errors at their own line and column,
// with the allowed keys listed. yaml.v3's KnownFields does not reach into
// custom unmarshalers or Node.Decode, and its errors carry no columns, so
// the walk is done here, once, for every config type of the harness.
type decoder struct {
	file      string
	errs      Errors
	positions map[string]pos
}

func (d *decoder) fail(n *yaml.Node, path string, err error) {
	ve := &ValidationError{File: d.file, Path: path, Err: err}
	if n != nil {
		ve.Line, ve.Col = n.Line, n.Column
	}
	// An error from a config type that decodes itself (inject's two-phase
	// fault decoding) carries its own, more precise position and path.
	var ce *inject.ConfigError
	if errors.As(err, &ce) {
		if ce.Line > 0 {
			ve.Line, ve.Col = ce.Line, ce.Col
		}
		ve.Path = joinPath(path, ce.Path)
		ve.Err = ce.Err
	}
	d.errs = append(d.errs, ve)
}

// defaulter is implemented by config types that fill in their defaults
// before a file's values are decoded over them.
type defaulter interface{ SetDefaults() }

var (
	yamlUnmarshaler = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeType        = reflect.TypeFor[yaml.Node]()
)

// decode fills v (addressable) from n; path names v for messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		d.positions[path] = pos{n.Line, n.Column}
	}
	t := v.Type()
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return
	}
	// Types that decode themselves (durations, inject's fault specs).
	if v.CanAddr() && (reflect.PointerTo(t).Implements(yamlUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler)) {
		if n.Tag == "!!null" {
			return
		}
		d.recordPositions(n, path)
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, cleanYAMLError(err))
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			return
		}
		if v.IsNil() {
			nv := reflect.New(t.Elem())
			// A type whose zero value is not its default (the gateway's
			// config, whose booleans default to true) fills itself in
			// first; the file then overrides what it sets.
			if df, ok := nv.Interface().(defaulter); ok {
				df.SetDefaults()
			}
			v.Set(nv)
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.fail(n, path, fmt.Errorf("want a list, got %s", describe(n)))
			return
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Tag == "!!null" {
			return
		}
		if n.Kind != yaml.MappingNode {
			d.fail(n, path, fmt.Errorf("want a mapping, got %s", describe(n)))
			return
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if seen[kn.Value] {
				d.fail(kn, joinPath(path, kn.Value), errors.New("duplicate key"))
				continue
			}
			seen[kn.Value] = true
			key := reflect.New(t.Key()).Elem()
			d.decode(kn, key, joinPath(path, kn.Value)+"(key)")
			val := reflect.New(t.Elem()).Elem()
			d.decode(vn, val, joinPath(path, kn.Value))
			v.SetMapIndex(key, val)
		}
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			d.fail(n, path, cleanYAMLError(err))
			return
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
	default:
		if n.Kind != yaml.ScalarNode {
			d.fail(n, path, fmt.Errorf("want a single value, got %s", describe(n)))
			return
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			d.fail(n, path, fmt.Errorf("want %s, got %q", kindName(t), n.Value))
		}
	}
}

// recordPositions notes where every key below n is, for types that decode
// themselves, so that later validation can still point into them.
func (d *decoder) recordPositions(n *yaml.Node, path string) {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			p := joinPath(path, n.Content[i].Value)
			v := n.Content[i+1]
			d.positions[p] = pos{v.Line, v.Column}
			d.recordPositions(v, p)
		}
	case yaml.SequenceNode:
		for i, item := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.positions[p] = pos{item.Line, item.Column}
			d.recordPositions(item, p)
		}
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Tag == "!!null" {
		return
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, fmt.Errorf("want a mapping, got %s", describe(n)))
		return
	}
	fields := structFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		key := kn.Value
		fp := joinPath(path, key)
		idx, ok := fields[key]
		if !ok {
			d.fail(kn, fp, fmt.Errorf("unknown field %q; allowed: %s", key, strings.Join(sortedKeys(fields), ", ")))
			continue
		}
		if seen[key] {
			d.fail(kn, fp, errors.New("duplicate key"))
			continue
		}
		seen[key] = true
		d.decode(vn, v.FieldByIndex(idx), fp)
	}
}

// structFields maps YAML keys to field indexes; fields without a yaml tag use
// their lower-cased name, "-" fields are skipped.
func structFields(t reflect.Type) map[string][]int {
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
			for k, idx := range structFields(f.Type) {
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

func sortedKeys(m map[string][]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func describe(n *yaml.Node) string {
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

func kindName(t reflect.Type) string {
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
// wrapping; the position is reported by the ValidationError.
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
