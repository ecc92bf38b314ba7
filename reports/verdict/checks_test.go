package verdict

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

// TestChecksAreTheExpectations: the checks table has one entry per
// expectation, named by its scenario key, in no other order than the
// table's; an expectation without a check (or a check without an
// expectation) would be silently never judged.
func TestChecksAreTheExpectations(t *testing.T) {
	var keys []string
	typ := reflect.TypeFor[expect.Expectations]()
	for i := range typ.NumField() {
		k, _, _ := strings.Cut(typ.Field(i).Tag.Get("yaml"), ",")
		if k != "" && k != "upstreams" {
			keys = append(keys, k)
		}
	}
	var names []string
	for _, c := range checks {
		if slices.Contains(names, c.name) {
			t.Errorf("check %s listed twice", c.name)
		}
		names = append(names, c.name)
	}
	slices.Sort(keys)
	slices.Sort(names)
	if !slices.Equal(keys, names) {
		t.Errorf("expectation keys %v\nchecks %v", keys, names)
	}
}

// TestEachCheckNamesItsResult: setting one expectation yields one result,
// named by that expectation's key (the name a scenario and JUnit use).
func TestEachCheckNamesItsResult(t *testing.T) {
	a := &analysis.Analysis{Upstreams: map[string]*analysis.UpstreamAnalysis{}, Phases: map[string]*analysis.PhaseStats{}}
	typ := reflect.TypeFor[expect.Expectations]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if k == "upstreams" || f.Type.Kind() != reflect.Pointer {
			continue
		}
		var e expect.Expectations
		v := reflect.New(f.Type.Elem())
		if us, ok := v.Interface().(*expect.UpstreamSet); ok {
			us.All = true // an empty set asserts nothing
		}
		reflect.ValueOf(&e).Elem().Field(i).Set(v)
		res := Evaluate(a, e)
		if len(res) != 1 || res[0].Name != k {
			t.Errorf("%s alone: results %+v, want one named %s", k, res, k)
		}
	}
}
