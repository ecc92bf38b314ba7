package render

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/reports/analysis"
)

// RunJSON renders run.json.
func RunJSON(a *analysis.Analysis) ([]byte, error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ReadRunJSON reads a run.json written by RunJSON.
func ReadRunJSON(path string) (*analysis.Analysis, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
	}
	var a analysis.Analysis
	if err := json.Unmarshal(b, &a); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", rehearse.ErrInvalid, path, err)
	}
	if a.Schema != analysis.SchemaVersion {
		return nil, fmt.Errorf("%w: %s: schema %q, want %q", rehearse.ErrInvalid, path, a.Schema, analysis.SchemaVersion)
	}
	return &a, nil
}
