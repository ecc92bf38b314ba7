package yamlstrict

import (
	"errors"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

type inner struct {
	A int    `yaml:"a"`
	B string `yaml:"b"`
}

type withDefault struct {
	N int `yaml:"n"`
	M int `yaml:"m"`
}

func (w *withDefault) SetDefaults() { w.N, w.M = 7, 8 }

// self decodes itself and fails with a located error for "bad: true".
type self struct{ v string }

type locErr struct{}

func (locErr) Error() string { return "self: bad" }
func (locErr) Location() (int, int, string, error) {
	return 9, 3, "inner.bad", errors.New("bad value")
}

func (s *self) UnmarshalYAML(n *yaml.Node) error {
	if strings.Contains(n.Value, "bad") {
		return locErr{}
	}
	s.v = n.Value
	return nil
}

type outer struct {
	In   inner        `yaml:"in"`
	Def  *withDefault `yaml:"def"`
	Self self         `yaml:"self"`
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

func TestDefaulterAndLocated(t *testing.T) {
	var o outer
	d := Decoder{Positions: map[string]Pos{}}
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
	if len(errs) != 1 || errs[0].Error() != "9:3: self.inner.bad: bad value" {
		t.Fatalf("located error: %v", errs)
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
