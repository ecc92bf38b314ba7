package scenarios

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// ValidationError is an error in a scenario file, with its position.
// Line and Col are 1-based; zero when the error is not tied to a place in
// the file (a missing required section is reported at its parent).
type ValidationError struct {
	File string
	Line int
	Col  int
	// Path is the dotted path of the offending key, e.g. "faults[1].type".
	Path string
	Err  error
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
	} else {
		b.WriteString("scenario")
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, ":%d", e.Col)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *ValidationError) Unwrap() error { return e.Err }

// Is makes every ValidationError an invalid-input error (exit code 2).
func (e *ValidationError) Is(target error) bool { return target == rehearse.ErrInvalid }

// Errors is a list of validation errors, reported together so a user can fix
// a file in one pass.
type Errors []*ValidationError

func (es Errors) Error() string {
	msgs := make([]string, len(es))
	for i, e := range es {
		msgs[i] = e.Error()
	}
	return strings.Join(msgs, "\n")
}

// Is makes Errors an invalid-input error (exit code 2).
func (es Errors) Is(target error) bool { return target == rehearse.ErrInvalid }

// Unwrap returns the individual errors.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// decodeFile decodes the scenario document strictly (every error
// collected) and keeps the positions of the values for validation.
func decodeFile(file string, doc *yaml.Node, s any) (map[string]yamlstrict.Pos, error) {
	d := yamlstrict.Decoder{All: true, Positions: map[string]yamlstrict.Pos{}}
	errs := d.Decode(doc, s, "")
	if len(errs) == 0 {
		return d.Positions, nil
	}
	out := make(Errors, len(errs))
	for i, e := range errs {
		out[i] = &ValidationError{File: file, Line: e.Line, Col: e.Col, Path: e.Path, Err: e.Err}
	}
	return nil, out
}
