package inject

import (
	"encoding"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// ConfigError is an error in an upstream or fault configuration, at a place
// in the YAML source. Line and Col are 1-based; zero when the error is not
// tied to a place (a config built in Go).
type ConfigError struct {
	Line, Col int
	// Path is the dotted path of the offending key, e.g. "params.code".
	Path string
	Err  error
}

// Error formats the error as "line:col: path: message".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes every ConfigError an invalid-input error (exit code 2).
func (e *ConfigError) Is(target error) bool { return target == rehearse.ErrInvalid }

// Position returns the line and column of the error, so that a caller
// decoding a larger file (the scenario) can report it in place.
func (e *ConfigError) Position() (line, col int) { return e.Line, e.Col }

// errAt returns a ConfigError at node n.
func errAt(n *yaml.Node, path string, err error) *ConfigError {
	ce := &ConfigError{Path: path, Err: err}
	if n != nil {
		ce.Line, ce.Col = n.Line, n.Column
	}
	return ce
}

var (
	yamlUnmarshalerType = reflect.TypeFor[yaml.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
	nodeType            = reflect.TypeFor[yaml.Node]()
)

// decodeStrict fills out (a pointer) from n. Unlike yaml.v3's Node.Decode,
// which ignores KnownFields, unknown and duplicate keys are errors, and every
// error carries the line and column of the offending node and lists the
// allowed keys. path prefixes the paths in errors.
func decodeStrict(n *yaml.Node, out any, path string) error {
	v := reflect.ValueOf(out)
	if v.Kind() != reflect.Pointer || v.IsNil() {
		return fmt.Errorf("decodeStrict: want a non-nil pointer, got %T", out)
	}
	return decodeValue(n, v.Elem(), path)
}

func decodeValue(n *yaml.Node, v reflect.Value, path string) error {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	t := v.Type()
	if t == nodeType {
		v.Set(reflect.ValueOf(*n))
		return nil
	}
	if reflect.PointerTo(t).Implements(yamlUnmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		if n.Tag == "!!null" {
			return nil
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Path = joinPath(path, ce.Path)
				return ce
			}
			return errAt(n, path, cleanYAMLError(err))
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
		return decodeValue(n, v.Elem(), path)
	case reflect.Struct:
		return decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Tag == "!!null" {
			return nil
		}
		if n.Kind != yaml.SequenceNode {
			return errAt(n, path, fmt.Errorf("want a list, got %s", describeNode(n)))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			if err := decodeValue(item, s.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
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
			return errAt(n, path, fmt.Errorf("want a mapping, got %s", describeNode(n)))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(t))
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			kn, vn := n.Content[i], n.Content[i+1]
			if seen[kn.Value] {
				return errAt(kn, joinPath(path, kn.Value), errors.New("duplicate key"))
			}
			seen[kn.Value] = true
			key := reflect.New(t.Key()).Elem()
			if err := decodeValue(kn, key, joinPath(path, kn.Value)); err != nil {
				return err
			}
			val := reflect.New(t.Elem()).Elem()
			if err := decodeValue(vn, val, joinPath(path, kn.Value)); err != nil {
				return err
			}
			v.SetMapIndex(key, val)
		}
		return nil
	case reflect.Interface:
		var x any
		if err := n.Decode(&x); err != nil {
			return errAt(n, path, cleanYAMLError(err))
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return nil
	default:
		if n.Kind != yaml.ScalarNode {
			return errAt(n, path, fmt.Errorf("want %s, got %s", kindName(t), describeNode(n)))
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return errAt(n, path, fmt.Errorf("want %s, got %q", kindName(t), n.Value))
		}
		return nil
	}
}

func decodeStruct(n *yaml.Node, v reflect.Value, path string) error {
	if n.Tag == "!!null" {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		return errAt(n, path, fmt.Errorf("want a mapping, got %s", describeNode(n)))
	}
	fields := yamlFields(v.Type())
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		fp := joinPath(path, kn.Value)
		idx, ok := fields[kn.Value]
		if !ok {
			return errAt(kn, fp, fmt.Errorf("unknown field %q; allowed: %s", kn.Value, strings.Join(sortedKeys(fields), ", ")))
		}
		if seen[kn.Value] {
			return errAt(kn, fp, errors.New("duplicate key"))
		}
		seen[kn.Value] = true
		if err := decodeValue(vn, v.FieldByIndex(idx), fp); err != nil {
			return err
		}
	}
	return nil
}

// yamlFields maps the YAML keys of struct type t to field indexes; fields
// without a yaml tag use their lower-cased name, "-" fields are skipped.
func yamlFields(t reflect.Type) map[string][]int {
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
			for k, idx := range yamlFields(f.Type) {
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

func sortedKeys[V any](m map[string]V) []string {
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

func describeNode(n *yaml.Node) string {
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
// wrapping; the position is carried by the ConfigError.
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
