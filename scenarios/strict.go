package scenarios

import (
	"cmp"
	"errors"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// decodeFile decodes the scenario document strictly (every error
// collected) and keeps the positions of the values for validation, also
// when there are errors: what decoded is validated too, so that a file's
// problems are all reported in one pass. Errors are rehearse.ConfigErrors.
func decodeFile(file string, doc *yaml.Node, s any) (map[string]yamlstrict.Pos, error) {
	d := yamlstrict.Decoder{File: displayName(file), All: true, Positions: map[string]yamlstrict.Pos{}}
	return d.Positions, d.Decode(doc, s, "").Err()
}

// mergeErrors puts the decoding and the validation errors of one file
// together, in file order. A validation error about a value that did not
// decode (the same key, a key above or below it, or the same list entry,
// which a failed entry leaves empty) says nothing new and is left out.
func mergeErrors(decodeErr, validateErr error) error {
	var out rehearse.ConfigErrors
	var owners []string
	if es, ok := errors.AsType[rehearse.ConfigErrors](decodeErr); ok {
		out = append(out, es...)
		for _, e := range es {
			owner := e.Path
			if i := strings.LastIndex(owner, "]"); i >= 0 {
				owner = owner[:i+1]
			}
			owners = append(owners, owner)
		}
	}
	related := func(p string) bool {
		for _, o := range owners {
			if p == o || strings.HasPrefix(p, o+".") || strings.HasPrefix(p, o+"[") ||
				strings.HasPrefix(o, p+".") || strings.HasPrefix(o, p+"[") {
				return true
			}
		}
		return false
	}
	if es, ok := errors.AsType[rehearse.ConfigErrors](validateErr); ok {
		for _, e := range es {
			if !related(e.Path) {
				out = append(out, e)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b *rehearse.ConfigError) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return out.Err()
}

// displayName is how errors name a scenario that has no file.
func displayName(file string) string {
	if file == "" {
		return "scenario"
	}
	return file
}
