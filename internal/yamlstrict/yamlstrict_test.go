package yamlstrict

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

type inner struct {
	A int    `yaml:"a"`
	B string `yaml:"b"`
}

type withDefault struct {
	N int `yaml:"n"`
	M int `yaml:"m"`
}

// self decodes itself and fails with a positioned error for "bad".
type self struct{ v string }

func (s *self) UnmarshalYAML(n *yaml.Node) error {
	if strings.Contains(n.Value, "bad") {
		return &rehearse.ConfigError{Line: 9, Col: 3, Path: "inner.bad", Err: errors.New("bad value")}
	}
	s.v = n.Value
	return nil
}

type outer struct {
	In   inner                  `yaml:"in"`
	Def  *withDefault           `yaml:"def"`
	Self self                   `yaml:"self"`
	Maps map[string]withDefault `yaml:"maps"`
	Any  any                    `yaml:"any"`
}

func node(t *testing.T, src string) *yaml.Node {
	t.Helper()
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		t.Fatal(err)
	}
	return &n
}

func TestFirstErrorOrAll(t *testing.T) {
	src := "in: {x: 1, a: nope}\n"
	var o outer
	var first Decoder
	if errs := first.Decode(node(t, src), &o, "top"); len(errs) != 1 || errs[0].Path != "top.in.x" || errs[0].Col != 6 {
		t.Fatalf("first: %v", errs)
	}
	all := Decoder{All: true}
	errs := all.Decode(node(t, src), &o, "")
	if len(errs) != 2 || errs[1].Error() != `1:15: in.a: want an integer, got "nope"` {
		t.Fatalf("all: %v", errs)
	}
}

func TestDefaultsAndPositionedErrors(t *testing.T) {
	// Values already in the target are defaults: a struct or pointer is
	// decoded in place.
	o := outer{Def: &withDefault{N: 7, M: 8}}
	d := Decoder{File: "f.yaml", Positions: map[string]Pos{}}
	if errs := d.Decode(node(t, "def: {m: 1}\nself: ok\n"), &o, ""); len(errs) > 0 {
		t.Fatal(errs)
	}
	if o.Def.N != 7 || o.Def.M != 1 || o.Self.v != "ok" {
		t.Fatalf("decoded %+v %+v", o.Def, o.Self)
	}
	if p := d.Positions["def.m"]; p != (Pos{1, 10}) {
		t.Errorf("position of def.m: %+v", p)
	}
	errs := d.Decode(node(t, "self: bad\n"), &o, "")
	if len(errs) != 1 || errs[0].Error() != "f.yaml:9:3: self.inner.bad: bad value" {
		t.Fatalf("positioned error: %v", errs)
	}
}

func TestMergeMapEntries(t *testing.T) {
	src := "maps: {a: {m: 1}, b: {n: 2}}\n"
	defaults := func() outer {
		return outer{Maps: map[string]withDefault{"a": {N: 7, M: 8}}}
	}
	o := defaults()
	var replace Decoder
	if errs := replace.Decode(node(t, src), &o, ""); len(errs) > 0 {
		t.Fatal(errs)
	}
	if o.Maps["a"] != (withDefault{M: 1}) {
		t.Errorf("without Merge an entry is replaced: %+v", o.Maps["a"])
	}
	o = defaults()
	merge := Decoder{Merge: true}
	if errs := merge.Decode(node(t, src), &o, ""); len(errs) > 0 {
		t.Fatal(errs)
	}
	if o.Maps["a"] != (withDefault{N: 7, M: 1}) || o.Maps["b"] != (withDefault{N: 2}) {
		t.Errorf("with Merge an entry is decoded over its default: %+v", o.Maps)
	}
}

func TestInterfaceHoldingPointerIsStrict(t *testing.T) {
	o := outer{Any: &inner{}}
	var d Decoder
	errs := d.Decode(node(t, "any: {a: 3, c: 1}\n"), &o, "")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `any.c: unknown field "c"; allowed: a, b`) {
		t.Fatalf("errors: %v", errs)
	}
	if o.Any.(*inner).A != 3 {
		t.Fatalf("decoded %+v", o.Any)
	}
	// An empty interface takes what the YAML says.
	o.Any = nil
	if errs := d.Decode(node(t, "any: [1, x]\n"), &o, ""); len(errs) > 0 || len(o.Any.([]any)) != 2 {
		t.Fatalf("any: %v %#v", errs, o.Any)
	}
}

func TestParseDocument(t *testing.T) {
	for _, tt := range []struct{ src, want string }{
		{"", "f.yaml: empty document"},
		{"# only a comment\n", "f.yaml: empty document"},
		{"a: 1\n---\nb: 2\n", "f.yaml:2:1: more than one YAML document; the file holds one"},
		{"x: 1\na: [1, 2\nb: 3\n", "f.yaml:2: invalid YAML: did not find expected ',' or ']' (in the mapping or list that starts on this line)"},
	} {
		_, err := ParseDocument("f.yaml", []byte(tt.src))
		if err == nil || err.Error() != tt.want || !errors.Is(err, rehearse.ErrInvalid) {
			t.Errorf("%q: %v, want %s", tt.src, err, tt.want)
		}
	}
	if n, err := ParseDocument("f.yaml", []byte("a: 1\n")); err != nil || n.Kind != yaml.DocumentNode {
		t.Fatal(n, err)
	}
}

func TestAliasBombBounded(t *testing.T) {
	src := `a: &a [x, x, x, x, x, x, x, x, x, x]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
`
	// Either this walker's visit bound or yaml.v3's own alias guard stops
	// it; what matters is that it stops, with an error, quickly.
	var d Decoder
	errs := d.Decode(node(t, src), &map[string]any{}, "")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "alias") {
		t.Fatalf("alias bomb: %v", errs)
	}
}

// TestStrictNumbers: every number of every config passes here, so a value
// that would crash a run (NaN cannot be written to the journal) or change
// it silently (a fraction truncated, an integer beyond 64 bits wrapped)
// is refused at its place.
func TestStrictNumbers(t *testing.T) {
	type nums struct {
		F  float64  `yaml:"f"`
		PF *float64 `yaml:"pf"`
		I  int64    `yaml:"i"`
		PI *int64   `yaml:"pi"`
		N  int      `yaml:"n"`
		U  uint16   `yaml:"u"`
		S  int8     `yaml:"s"`
	}
	for _, tt := range []struct{ src, want string }{
		{"f: .nan", "f.yaml:1:4: f: want a finite number, got .nan"},
		{"f: .NaN", "f.yaml:1:4: f: want a finite number, got .NaN"},
		{"f: .inf", "f.yaml:1:4: f: want a finite number, got .inf"},
		{"f: -.Inf", "f.yaml:1:4: f: want a finite number, got -.Inf"},
		{"f: +.inf", "f.yaml:1:4: f: want a finite number, got +.inf"},
		{"pf: .nan", "f.yaml:1:5: pf: want a finite number, got .nan"},
		{"f: 1e400", `f.yaml:1:4: f: want a number, got "1e400"`},
		{"i: -9223372036854775809", "f.yaml:1:4: i: out of range: want an integer from -9223372036854775808 to 9223372036854775807, got -9223372036854775809"},
		{"pi: 9223372036854775808", "f.yaml:1:5: pi: out of range: want an integer from -9223372036854775808 to 9223372036854775807, got 9223372036854775808"},
		{"pi: 99999999999999999999999", "f.yaml:1:5: pi: out of range: want an integer from -9223372036854775808 to 9223372036854775807, got 99999999999999999999999"},
		{"i: 9223372036854775807.0", `f.yaml:1:4: i: want an integer, got "9223372036854775807.0"`},
		{"n: 1.5", `f.yaml:1:4: n: want an integer, got "1.5"`},
		{"n: .inf", `f.yaml:1:4: n: want an integer, got ".inf"`},
		{"u: 65536", "f.yaml:1:4: u: out of range: want an integer from 0 to 65535, got 65536"},
		{"u: -1", "f.yaml:1:4: u: out of range: want an integer from 0 to 65535, got -1"},
		{"s: -129", "f.yaml:1:4: s: out of range: want an integer from -128 to 127, got -129"},
	} {
		var v nums
		d := Decoder{File: "f.yaml"}
		errs := d.Decode(node(t, tt.src), &v, "")
		if len(errs) != 1 || errs[0].Error() != tt.want {
			t.Errorf("%s: %v\nwant %s", tt.src, errs, tt.want)
		}
	}
	var v nums
	var d Decoder
	src := "{f: 2.5, pf: -1e300, i: -9223372036854775808, pi: 0x7fffffffffffffff, n: 1_000, u: 65535, s: -128}"
	if errs := d.Decode(node(t, src), &v, ""); len(errs) > 0 {
		t.Fatal(errs)
	}
	if v.F != 2.5 || *v.PF != -1e300 || v.I != -9223372036854775808 || *v.PI != 9223372036854775807 || v.N != 1000 || v.U != 65535 || v.S != -128 {
		t.Fatalf("decoded %+v", v)
	}
}
