package gateway

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder decodes YAML nodes into the config structs strictly: an unknown
// key, a wrong node kind or a bad scalar is an error at the node's own
// line and column. yaml.v3's KnownFields reports lines only, and is not
// inherited by Node.Decode, hence this small walker. It records the
// position of every field it sets, so that validation errors point at the
// offending value too.
type decoder struct {
	file   string
	pos    map[string][2]int
	visits int
}

// maxVisits bounds the walk, against alias bombs ("billion laughs").
const maxVisits = 100000

func (d *decoder) fail(n *yaml.Node, field string, err error) error {
	return &ValidationError{File: d.file, Line: n.Line, Col: n.Column, Field: field, Err: err}
}

func (d *decoder) config(n *yaml.Node, cfg *Config) error {
	return d.value(n, reflect.ValueOf(cfg).Elem(), "")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) value(n *yaml.Node, v reflect.Value, path string) error {
	if d.visits++; d.visits > maxVisits {
		return d.fail(n, path, errors.New("document too large or too many aliases"))
	}
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if path != "" {
		d.pos[path] = [2]int{n.Line, n.Column}
	}
	// Leaf types with their own YAML decoding (rehearse.Duration).
	if v.CanAddr() {
		if _, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
			if err := n.Decode(v.Addr().Interface()); err != nil {
				return d.fail(n, path, cleanYAML(err))
			}
			return nil
		}
	}
	switch v.Kind() {
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return nil
			}
			return d.fail(n, path, fmt.Errorf("want a mapping, got %s", describe(n)))
		}
		fields := map[string]int{}
		var known []string
		t := v.Type()
		for i := 0; i < t.NumField(); i++ {
			tag, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
			if tag != "" && tag != "-" {
				fields[tag] = i
				known = append(known, tag)
			}
		}
		seen := map[string]bool{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			idx, ok := fields[k.Value]
			if !ok {
				return d.fail(k, join(path, k.Value), fmt.Errorf("unknown field (known: %s)", strings.Join(known, ", ")))
			}
			if seen[k.Value] {
				return d.fail(k, join(path, k.Value), errors.New("duplicate field"))
			}
			seen[k.Value] = true
			if err := d.value(val, v.Field(idx), join(path, k.Value)); err != nil {
				return err
			}
		}
		return nil
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			if n.Tag == "!!null" {
				return nil
			}
			return d.fail(n, path, fmt.Errorf("want a mapping, got %s", describe(n)))
		}
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, val := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				return d.fail(k, path, errors.New("keys must be strings"))
			}
			key := reflect.ValueOf(k.Value)
			if v.MapIndex(key).IsValid() && d.pos[join(path, k.Value)] != [2]int{} {
				return d.fail(k, join(path, k.Value), errors.New("duplicate key"))
			}
			elem := reflect.New(v.Type().Elem()).Elem()
			if old := v.MapIndex(key); old.IsValid() {
				elem.Set(old)
			}
			if err := d.value(val, elem, join(path, k.Value)); err != nil {
				return err
			}
			v.SetMapIndex(key, elem)
		}
		return nil
	case reflect.String, reflect.Int, reflect.Int64, reflect.Float64, reflect.Bool:
		if n.Kind != yaml.ScalarNode {
			return d.fail(n, path, fmt.Errorf("want a %s, got %s", v.Kind(), describe(n)))
		}
		if v.Kind() == reflect.String && n.Tag != "!!str" && n.Tag != "!!null" && n.Style == 0 {
			// A bare number or boolean where text is wanted is accepted
			// as its text, like yaml.v3 does.
			v.SetString(n.Value)
			return nil
		}
		if err := n.Decode(v.Addr().Interface()); err != nil {
			return d.fail(n, path, cleanYAML(err))
		}
		return nil
	default:
		return d.fail(n, path, fmt.Errorf("internal: unsupported field type %s", v.Type()))
	}
}

func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	default:
		return fmt.Sprintf("%q", n.Value)
	}
}

// cleanYAML drops yaml.v3's "yaml: unmarshal errors: line N:" framing; the
// ValidationError carries the position.
func cleanYAML(err error) error {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "yaml: unmarshal errors:\n")
	msg = strings.TrimSpace(msg)
	if strings.HasPrefix(msg, "line ") {
		if i := strings.Index(msg, ": "); i >= 0 {
			msg = msg[i+2:]
		}
	}
	return errors.New(msg)
}
