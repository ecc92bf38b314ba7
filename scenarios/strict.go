package scenarios

import (
	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// decodeFile decodes the scenario document strictly (every error
// collected) and keeps the positions of the values for validation. Errors
// are rehearse.ConfigErrors.
func decodeFile(file string, doc *yaml.Node, s any) (map[string]yamlstrict.Pos, error) {
	d := yamlstrict.Decoder{File: displayName(file), All: true, Positions: map[string]yamlstrict.Pos{}}
	if errs := d.Decode(doc, s, ""); len(errs) > 0 {
		return nil, errs
	}
	return d.Positions, nil
}

// displayName is how errors name a scenario that has no file.
func displayName(file string) string {
	if file == "" {
		return "scenario"
	}
	return file
}
