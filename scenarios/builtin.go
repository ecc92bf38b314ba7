package scenarios

import (
	"bytes"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/halfopen/rehearse"
)

// The built-in drills and the bundled capture ship inside the binary, so
// `rehearse run weekly` needs no files at all.
//
//go:embed drills/*.yaml
var drillFS embed.FS

//go:embed captures/*.pcapng
var captureFS embed.FS

// DefaultDrill is the drill `make rehearse` runs: the field's weekly drill.
const DefaultDrill = "weekly"

// Drill is a built-in scenario's name and one-line description.
type Drill struct {
	Name        string
	Description string
}

// Drills lists the built-in drills, sorted by name.
func Drills() []Drill {
	entries, _ := fs.ReadDir(drillFS, "drills")
	var out []Drill
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".yaml")
		data, _ := drillFS.ReadFile(path.Join("drills", e.Name()))
		var head struct {
			Description string `yaml:"description"`
		}
		_ = yaml.Unmarshal(data, &head)
		desc, _, _ := strings.Cut(strings.TrimSpace(head.Description), "\n")
		out = append(out, Drill{Name: name, Description: desc})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// DrillSource returns the YAML of a built-in drill, as shipped.
func DrillSource(name string) ([]byte, error) {
	data, err := drillFS.ReadFile(path.Join("drills", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w: no built-in drill %q; built-in drills: %s", rehearse.ErrInvalid, name, strings.Join(drillNames(), ", "))
	}
	return data, nil
}

// Builtin loads a built-in drill.
func Builtin(name string) (*Scenario, error) {
	data, err := DrillSource(name)
	if err != nil {
		return nil, err
	}
	s, err := decode("builtin:"+name, data)
	if err != nil {
		return nil, err
	}
	s.Builtin = name
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return s, nil
}

// Resolve loads a scenario named on the command line: a file path, or the
// name of a built-in drill when no such file exists.
func Resolve(arg string) (*Scenario, error) {
	if !strings.ContainsAny(arg, "/\\.") || strings.HasPrefix(arg, "builtin:") {
		name := strings.TrimPrefix(arg, "builtin:")
		if _, err := drillFS.ReadFile(path.Join("drills", name+".yaml")); err == nil {
			return Builtin(name)
		}
	}
	return Load(arg)
}

func drillNames() []string {
	var names []string
	for _, d := range Drills() {
		names = append(names, d.Name)
	}
	return names
}

// Captures lists the bundled captures by the name used as
// "builtin:<name>" in a scenario's replay.capture.
func Captures() []string {
	entries, _ := fs.ReadDir(captureFS, "captures")
	var out []string
	for _, e := range entries {
		out = append(out, strings.TrimSuffix(e.Name(), ".pcapng"))
	}
	return out
}

// OpenBuiltinCapture opens a capture bundled in the binary, by the name a
// scenario gives it after "builtin:" (see Captures).
func OpenBuiltinCapture(name string) (io.ReadCloser, error) {
	data, err := captureFS.ReadFile(path.Join("captures", name+".pcapng"))
	if err != nil {
		return nil, fmt.Errorf("%w: no built-in capture %q; built-in captures: %s", rehearse.ErrInvalid, name, strings.Join(Captures(), ", "))
	}
	return io.NopCloser(bytes.NewReader(data)), nil
}
