package inject

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// ConfigError is an error in an upstream or fault configuration, at a place
// in the YAML source. Line and Col are 1-based; zero when the error is not
// tied to a place (a config built in Go).
type ConfigError struct {
	Line, Col int
	// Path is the dotted path of the offending key, e.g. "params.code".
	Path string
	Err  error
}

// Error formats the error as "line:col: path: message".
func (e *ConfigError) Error() string {
	var b strings.Builder
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", e.Line, e.Col)
	}
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

// Unwrap returns the underlying error.
func (e *ConfigError) Unwrap() error { return e.Err }

// Is makes every ConfigError an invalid-input error (exit code 2).
func (e *ConfigError) Is(target error) bool { return target == rehearse.ErrInvalid }

// Position returns the line and column of the error, so that a caller
// decoding a larger file (the scenario) can report it in place.
func (e *ConfigError) Position() (line, col int) { return e.Line, e.Col }

// Location implements yamlstrict.Located: a fault decoded inside a
// scenario reports its own position and path.
func (e *ConfigError) Location() (line, col int, path string, cause error) {
	return e.Line, e.Col, e.Path, e.Err
}

// errAt returns a ConfigError at node n.
func errAt(n *yaml.Node, path string, err error) *ConfigError {
	ce := &ConfigError{Path: path, Err: err}
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
		e := errs[0]
		return &ConfigError{Line: e.Line, Col: e.Col, Path: e.Path, Err: e.Err}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return yamlstrict.SortedKeys(m) }

func joinPath(parent, key string) string { return yamlstrict.JoinPath(parent, key) }
