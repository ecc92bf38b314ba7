package scenarios

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// compiledSchema compiles the checked-in JSON Schema with a validator
// library, as an editor or a CI linter would use it.
func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := os.ReadFile(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// yamlInstance reads a YAML scenario as the JSON value a validator sees.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal(src, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestSchemaValidatesShippedScenarios runs the schema over every scenario
// the project ships (the built-in drills, the HAProxy drills, the valid
// corpus): an editor must not flag a file the harness accepts.
func TestSchemaValidatesShippedScenarios(t *testing.T) {
	sch := compiledSchema(t)
	files, _ := filepath.Glob(filepath.Join("drills", "*.yaml"))
	more, _ := filepath.Glob(filepath.Join("haproxy", "*.yaml"))
	valid, _ := filepath.Glob(filepath.Join("testdata", "valid-*.yaml"))
	files = append(append(files, more...), valid...)
	if len(files) < 15 {
		t.Fatalf("only %d shipped scenarios found", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(yamlInstance(t, src)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// TestSchemaRejectsBadFaultParams: each fault type's params are checked
// by the schema, by type (oneOf on type).
func TestSchemaRejectsBadFaultParams(t *testing.T) {
	sch := compiledSchema(t)
	base := "faults:\n  - type: %s\n    upstream: search\n    params: %s\n"
	for _, tt := range []struct {
		typ, params string
		ok          bool
	}{
		{"status", `{code: 429}`, true},
		{"status", `{code: "x"}`, false},
		{"status", `{after: 30s}`, false}, // retry_after's key
		{"retry_after", `{after: 30s}`, true},
		{"retry_after", `{after: 30}`, false},
		{"stream_cut", `{after_events: 3, then: rst}`, true},
		{"latency", `{fixed: 2s}`, true},
		{"latency", `{fixed: 2s, bogus: 1}`, false},
		{"nope", `{}`, false},
	} {
		src := []byte(fmt.Sprintf(base, tt.typ, tt.params))
		err := sch.Validate(yamlInstance(t, src))
		if (err == nil) != tt.ok {
			t.Errorf("%s params %s: valid=%v, want %v (%v)", tt.typ, tt.params, err == nil, tt.ok, err)
		}
	}
}
