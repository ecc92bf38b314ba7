package scenarios

import (
	"encoding/json"
	"flag"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the checked-in JSON Schema and golden files")

// schemaPath is the checked-in schema editors point at.
var schemaPath = filepath.Join("..", "docs", "scenario.schema.json")

// TestSchemaMatchesTypes fails when the Go types changed and the checked-in
// schema was not regenerated (go test ./scenarios -run Schema -update).
func TestSchemaMatchesTypes(t *testing.T) {
	got, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, schemaPath, got, *update)
}

// TestSchemaCoversEveryField walks the schema and the types together: every
// YAML key of the Scenario types is a property, and objects are closed.
func TestSchemaCoversEveryField(t *testing.T) {
	b, err := JSONSchema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Properties map[string]any            `json:"properties"`
		Defs       map[string]map[string]any `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"version", "name", "seed", "gateway", "replay", "upstreams", "faults", "expectations"} {
		if _, ok := s.Properties[key]; !ok {
			t.Errorf("schema lacks top-level %q", key)
		}
	}
	replay := s.Defs["ReplaySpec"]["properties"].(map[string]any)
	for key := range structFields(reflectType[ReplaySpec]()) {
		if _, ok := replay[key]; !ok {
			t.Errorf("ReplaySpec schema lacks %q", key)
		}
	}
	dur := replay["duration"].(map[string]any)
	if dur["pattern"] != durationPattern {
		t.Errorf("duration is not a duration string: %v", dur)
	}
	for name, def := range s.Defs {
		if def["type"] == "object" && def["additionalProperties"] != false {
			t.Errorf("%s is not closed (additionalProperties)", name)
		}
	}
	fault := s.Defs["inject.FaultSpec"]["properties"].(map[string]any)
	if enum := fault["type"].(map[string]any)["enum"].([]any); len(enum) < 10 {
		t.Errorf("fault type enum too short: %v", enum)
	}
	// Each fault type's params are described, from its own params type.
	branches := s.Defs["inject.FaultSpec"]["oneOf"].([]any)
	if len(branches) != len(inject.FaultTypes()) {
		t.Fatalf("%d params branches for %d fault types", len(branches), len(inject.FaultTypes()))
	}
	for i, typ := range inject.FaultTypes() {
		props := branches[i].(map[string]any)["properties"].(map[string]any)
		ref, _ := props["params"].(map[string]any)["$ref"].(string)
		want := "#/$defs/inject." + reflect.TypeOf(inject.NewParams(typ)).Elem().Name()
		if props["type"].(map[string]any)["const"] != typ || ref != want {
			t.Errorf("branch %d: %v, want type %s with params %s", i, props, typ, want)
		}
	}
}
