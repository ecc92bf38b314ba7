package scenarios

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// Load reads, decodes strictly, defaults and validates a scenario file.
// "-" reads standard input. Errors are *ValidationError or Errors (both
// rehearse.ErrInvalid) with file:line:col, or an I/O error.
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
	if err != nil {
		return nil, err
	}
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// decode is the strict decoding phase alone.
func decode(file string, data []byte) (*Scenario, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &ValidationError{File: file, Err: errors.New("empty scenario: want at least a gateway, or an empty mapping {} for all defaults")}
		}
		return nil, syntaxError(file, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, &ValidationError{File: file, Line: extra.Line, Col: extra.Column, Err: errors.New("more than one YAML document; a scenario file holds one")}
	}
	s := &Scenario{File: file}
	positions, err := decodeFile(file, &doc, s)
	if err != nil {
		return nil, err
	}
	s.positions = positions
	return s, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError turns a YAML syntax error into a ValidationError with its line.
func syntaxError(file string, err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		problem := m[2]
		if strings.HasPrefix(problem, "did not find expected") {
			// yaml.v3 reports parser errors at the zero-based line of the
			// block or flow collection being parsed, not at the fault:
			// convert to one-based and say what the line is.
			line++
			problem += " (in the mapping or list that starts on this line)"
		}
		return &ValidationError{File: file, Line: line, Err: fmt.Errorf("invalid YAML: %s", problem)}
	}
	return &ValidationError{File: file, Err: fmt.Errorf("invalid YAML: %s", strings.TrimPrefix(msg, "yaml: "))}
}

// at returns a ValidationError for the field at path, positioned at that
// field or, failing that, at its nearest parent present in the file.
func (s *Scenario) at(path string, err error) *ValidationError {
	ve := &ValidationError{File: s.File, Path: path, Err: err}
	for p := path; p != ""; p = parentPath(p) {
		if ps, ok := s.positions[p]; ok {
			ve.Line, ve.Col = ps.Line, ps.Col
			break
		}
	}
	return ve
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

func validURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("URL %q has no host", raw)
	}
	return nil
}
