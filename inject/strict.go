package inject

import (
	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// errAt returns a ConfigError at node n.
func errAt(n *yaml.Node, path string, err error) *rehearse.ConfigError {
	ce := &rehearse.ConfigError{Path: path, Err: err}
	if n != nil {
		ce.Line, ce.Col = n.Line, n.Column
	}
	return ce
}

// decodeStrict fills out (a pointer) from n with the harness's one strict
// walker: unknown and duplicate keys are errors, and every error carries the
// line and column of the offending node and lists the allowed keys. path
// prefixes the paths in errors.
func decodeStrict(n *yaml.Node, out any, path string) error {
	var d yamlstrict.Decoder
	if errs := d.Decode(n, out, path); len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func joinPath(parent, key string) string { return yamlstrict.JoinPath(parent, key) }
