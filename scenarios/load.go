package scenarios

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/yamlstrict"
)

// Load reads, decodes strictly, defaults and validates a scenario file.
// "-" reads standard input. Errors are *rehearse.ConfigError or
// rehearse.ConfigErrors (both rehearse.ErrInvalid) with file:line:col, or
// an I/O error.
func Load(path string) (*Scenario, error) {
	var (
		data []byte
		err  error
	)
	if path == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("%w: scenario %s: no such file (built-in drills: rehearse scenarios list)", rehearse.ErrInvalid, path)
		}
		return nil, fmt.Errorf("%w: scenario: %w", rehearse.ErrInvalid, err)
	}
	return Parse(path, data)
}

// Parse decodes, defaults and validates a scenario from data; file names it
// in messages and anchors relative capture paths.
func Parse(file string, data []byte) (*Scenario, error) {
	s, err := decode(file, data)
	if s == nil {
		return nil, err
	}
	// What decoded is defaulted and validated even when some of it did
	// not: every problem of the file is reported in one pass, references
	// to unknown upstreams included.
	s.ApplyDefaults()
	if err := mergeErrors(err, s.Validate()); err != nil {
		return nil, err
	}
	return s, nil
}

// decode is the strict decoding phase alone. It returns the scenario as
// far as it decoded, with the decoding errors; nil when the file is not
// YAML at all.
func decode(file string, data []byte) (*Scenario, error) {
	doc, err := yamlstrict.ParseDocument(displayName(file), data)
	if errors.Is(err, yamlstrict.ErrEmpty) {
		return nil, &rehearse.ConfigError{File: displayName(file), Err: errors.New("empty scenario: want at least a gateway, or an empty mapping {} for all defaults")}
	}
	if err != nil {
		return nil, err
	}
	s := &Scenario{File: file}
	positions, err := decodeFile(file, doc, s)
	s.positions = positions
	return s, err
}

// at returns the error err of the field at path, positioned at that field
// or, failing that, at its nearest parent present in the file. An err that
// is a *rehearse.ConfigError names a key below path (a package's own
// validation of its section): the error is placed at that key.
// ErrorAt places err at the scenario key path (e.g. "replay.capture"),
// with the file name and the key's line and column (or its closest parent
// present in the file): how a check made outside this package, such as
// reading the capture, reports a problem of the scenario.
func (s *Scenario) ErrorAt(path string, err error) *rehearse.ConfigError {
	return s.at(path, err)
}

func (s *Scenario) at(path string, err error) *rehearse.ConfigError {
	ce := rehearse.AtPath(path, err)
	for p := ce.Path; p != ""; p = parentPath(p) {
		if flag, ok := s.flags[p]; ok {
			return &rehearse.ConfigError{Path: "--" + flag, Err: ce.Err}
		}
	}
	ce.File = displayName(s.File)
	if ce.Line > 0 {
		return ce
	}
	for p := ce.Path; p != ""; p = parentPath(p) {
		if ps, ok := s.positions[p]; ok {
			ce.Line, ce.Col = ps.Line, ps.Col
			break
		}
	}
	return ce
}

func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i <= 0 {
		return ""
	}
	return p[:i]
}

// Dir is the directory relative paths in the scenario are resolved against.
func (s *Scenario) Dir() string {
	if s.File == "" || s.File == "-" || s.Builtin != "" {
		wd, _ := os.Getwd()
		return wd
	}
	return filepath.Dir(s.File)
}
