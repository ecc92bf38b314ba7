package scenarios

import (
	"encoding/json"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/yamlstrict"
	"github.com/halfopen/rehearse/reports/expect"
)

// SchemaID is the $id of the generated JSON Schema.
const SchemaID = "https://github.com/halfopen/rehearse/docs/scenario.schema.json"

// schemaer lets a config type describe its own YAML shape when its Go
// fields do not (a type with a custom UnmarshalYAML).
type schemaer interface {
	JSONSchema() map[string]any
}

var (
	durationType = reflect.TypeFor[rehearse.Duration]()
	schemaerType = reflect.TypeFor[schemaer]()
)

// durationPattern matches Go duration strings.
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// JSONSchema returns the JSON Schema (draft 2020-12) of the scenario file,
// generated from the Go types so the two cannot drift; the checked-in copy
// in docs/scenario.schema.json is compared with it by a test.
func JSONSchema() ([]byte, error) {
	g := &schemaGen{defs: map[string]any{}}
	g.schemaFor(reflect.TypeFor[Scenario]())
	// The root is the Scenario object itself, not a reference to it.
	root := g.defs["Scenario"].(map[string]any)
	delete(g.defs, "Scenario")
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = SchemaID
	root["title"] = "rehearse scenario"
	root["description"] = "A rehearsal: the gateway under test, the replay, the upstreams, the fault timeline and the expectations. See docs/SCENARIOS.md."
	if len(g.defs) > 0 {
		root["$defs"] = g.defs
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

type schemaGen struct {
	defs map[string]any
}

func (g *schemaGen) schemaFor(t reflect.Type) map[string]any {
	if t == faultSpecType {
		return g.faultSchema()
	}
	if reflect.PointerTo(t).Implements(schemaerType) {
		return reflect.New(t).Interface().(schemaer).JSONSchema()
	}
	if t.Implements(schemaerType) {
		return reflect.Zero(t).Interface().(schemaer).JSONSchema()
	}
	switch {
	case t == durationType:
		return map[string]any{"type": "string", "pattern": durationPattern}
	case t == yamlNodeType:
		return map[string]any{}
	case t == upstreamSetType:
		// true (all), false (none) or a list of upstream names.
		return map[string]any{"type": []string{"boolean", "array"}, "items": map[string]any{"type": "string"}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schemaFor(t.Elem())
	case reflect.Struct:
		return g.structSchema(t)
	case reflect.Slice, reflect.Array:
		return map[string]any{"type": "array", "items": g.schemaFor(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schemaFor(t.Elem())}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.String:
		return map[string]any{"type": "string"}
	}
	return map[string]any{}
}

// structSchema describes a struct as a closed object. Named structs go to
// $defs once, so shared types (a match rule used in many places) appear once.
func (g *schemaGen) structSchema(t reflect.Type) map[string]any {
	name := defName(t)
	if name != "" {
		ref := map[string]any{"$ref": "#/$defs/" + name}
		if _, ok := g.defs[name]; ok {
			return ref
		}
		g.defs[name] = map[string]any{} // placeholder against recursion
	}
	props := map[string]any{}
	for key, idx := range yamlstrict.Fields(t) {
		f := t.FieldByIndex(idx)
		s := g.schemaFor(f.Type)
		if doc := f.Tag.Get("doc"); doc != "" {
			s = withDescription(s, doc)
		}
		props[key] = s
	}
	obj := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
	if name == "" {
		return obj
	}
	g.defs[name] = obj
	return map[string]any{"$ref": "#/$defs/" + name}
}

func withDescription(s map[string]any, doc string) map[string]any {
	if _, isRef := s["$ref"]; isRef {
		// A sibling description next to $ref is allowed in 2020-12.
		return map[string]any{"$ref": s["$ref"], "description": doc}
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["description"] = doc
	return out
}

func defName(t reflect.Type) string {
	if t.Name() == "" {
		return ""
	}
	pkg := t.PkgPath()
	// The expectation types moved from reports into its leaf
	// reports/expect; their $defs keep the published names
	// (reports.Expectations) so that the schema and anything pointing
	// into it stay the same.
	if strings.HasSuffix(pkg, "/reports/expect") {
		pkg = "reports"
	}
	if i := strings.LastIndex(pkg, "/"); i >= 0 {
		pkg = pkg[i+1:]
	}
	if pkg == "scenarios" {
		return t.Name()
	}
	return pkg + "." + t.Name()
}

var (
	faultSpecType   = reflect.TypeFor[inject.FaultSpec]()
	upstreamSetType = reflect.TypeFor[expect.UpstreamSet]()
	yamlNodeType    = reflect.TypeFor[yaml.Node]()
)

// faultSchema describes a fault entry: the envelope's fields, the type as
// an enum of the catalogue, and params by type: one branch of a oneOf per
// fault type, whose type is that constant and whose params are that type's
// params struct (the same Go type the decoder fills), so that an editor
// completes and checks them.
func (g *schemaGen) faultSchema() map[string]any {
	const name = "inject.FaultSpec"
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = map[string]any{}
		props := map[string]any{}
		for key, idx := range yamlstrict.Fields(faultSpecType) {
			f := faultSpecType.FieldByIndex(idx)
			switch key {
			case "type":
				props[key] = map[string]any{"type": "string", "enum": inject.FaultTypes(), "description": "fault type from the catalogue (docs/FAULTS.md)"}
			case "params":
				props[key] = map[string]any{"type": "object", "description": "the fault type's parameters (docs/FAULTS.md)"}
			default:
				props[key] = g.schemaFor(f.Type)
			}
		}
		var byType []any
		for _, typ := range inject.FaultTypes() {
			params := g.schemaFor(reflect.TypeOf(inject.NewParams(typ)))
			byType = append(byType, map[string]any{
				"properties": map[string]any{
					"type":   map[string]any{"const": typ},
					"params": withDescription(params, inject.FaultTypeSummary(typ)),
				},
			})
		}
		g.defs[name] = map[string]any{
			"type": "object", "properties": props, "required": []string{"type", "upstream"},
			"additionalProperties": false, "oneOf": byType,
		}
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}
