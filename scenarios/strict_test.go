package scenarios

import (
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

type tInner struct {
	Every rehearse.Duration `yaml:"every"`
	Codes []int             `yaml:"codes"`
}

type tOuter struct {
	Name   string            `yaml:"name"`
	Rate   float64           `yaml:"rate"`
	On     bool              `yaml:"on"`
	Inner  *tInner           `yaml:"inner"`
	Items  []tInner          `yaml:"items"`
	Labels map[string]string `yaml:"labels"`
	Raw    yaml.Node         `yaml:"raw"`
}

func decodeT(t *testing.T, src string) (tOuter, *decoded) {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	var out tOuter
	positions, err := decodeFile("f.yaml", &n, &out)
	return out, &decoded{positions: positions, err: err}
}

// decoded is what decodeT saw: the positions or the errors.
type decoded struct {
	positions map[string]yamlstrict.Pos
	err       error
}

func (d *decoded) errs() rehearse.ConfigErrors {
	var es rehearse.ConfigErrors
	if d.err != nil {
		es = d.err.(rehearse.ConfigErrors)
	}
	return es
}

func TestStrictDecodeValid(t *testing.T) {
	out, d := decodeT(t, "name: x\nrate: 2.5\non: true\ninner:\n  every: 250ms\n  codes: [503, 429]\nitems:\n  - every: 1s\nlabels: {a: b}\nraw: {anything: [1, 2]}\n")
	if len(d.errs()) > 0 {
		t.Fatal(d.errs())
	}
	if out.Name != "x" || out.Rate != 2.5 || !out.On || out.Inner.Every.String() != "250ms" ||
		!reflect.DeepEqual(out.Inner.Codes, []int{503, 429}) || out.Items[0].Every.String() != "1s" ||
		out.Labels["a"] != "b" || out.Raw.Kind != yaml.MappingNode {
		t.Fatalf("decoded %+v", out)
	}
	if p := d.positions["inner.every"]; p.Line != 5 || p.Col != 10 {
		t.Errorf("position of inner.every = %+v", p)
	}
}

func TestStrictDecodeErrors(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"unknown top", "name: x\nrat: 10\n", []string{`f.yaml:2:1: rat: unknown field "rat"; allowed: inner, items, labels, name, on, rate, raw`}},
		{"unknown nested", "inner:\n  evry: 1s\n", []string{`f.yaml:2:3: inner.evry: unknown field "evry"; allowed: codes, every`}},
		{"bad duration", "inner:\n  every: 30\n", []string{`f.yaml:2:10: inner.every: duration must be a string with a unit`}},
		{"bad number", "rate: fast\n", []string{`f.yaml:1:7: rate: want a number, got "fast"`}},
		{"bad bool", "on: maybe\n", []string{`f.yaml:1:5: on: want true or false, got "maybe"`}},
		{"list for map", "inner: [1]\n", []string{`f.yaml:1:8: inner: want a mapping, got a list`}},
		{"scalar for list", "items: 3\n", []string{`f.yaml:1:8: items: want a list, got "3"`}},
		{"list item", "items:\n  - every: 1s\n  - bogus: 1\n", []string{`f.yaml:3:5: items[1].bogus: unknown field`}},
		{"duplicate", "name: a\nname: b\n", []string{`f.yaml:2:1: name: duplicate key`}},
		{"several", "rat: 1\ninner:\n  every: x\n", []string{`f.yaml:1:1: rat`, `f.yaml:3:10: inner.every: invalid duration "x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := decodeT(t, tt.src)
			errs := d.errs()
			if len(errs) != len(tt.want) {
				t.Fatalf("got %d errors (%v), want %d", len(errs), errs, len(tt.want))
			}
			for i, w := range tt.want {
				if got := errs[i].Error(); !strings.HasPrefix(got, w) {
					t.Errorf("error %d:\n got %s\nwant prefix %s", i, got, w)
				}
			}
		})
	}
}

func reflectType[T any]() reflect.Type { return reflect.TypeFor[T]() }

// structFields is the walker's key table, for the schema tests.
func structFields(t reflect.Type) map[string][]int { return yamlstrict.Fields(t) }
