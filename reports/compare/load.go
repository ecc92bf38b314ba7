package compare

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"
)

// loadSide expands directories into runs: a directory with a journal is a
// run; otherwise its subdirectories with journals are.
func loadSide(dirs []string, scenario string) ([]*SideRun, error) {
	var out []*SideRun
	for _, d := range dirs {
		paths, err := runDirs(d)
		if err != nil {
			return nil, err
		}
		archive := len(paths) != 1 || paths[0] != d
		for _, p := range paths {
			r, err := LoadRun(p)
			if err != nil {
				return nil, err
			}
			if scenario != "" && r.A.Run.Scenario != scenario && !(len(scenario) >= 8 && strings.HasPrefix(strings.TrimPrefix(r.Digest, "sha256:"), strings.TrimPrefix(scenario, "sha256:"))) {
				if !archive {
					return nil, fmt.Errorf("%w: %s is a run of %s, not of %s", rehearse.ErrInvalid, p, r.A.Run.Scenario, scenario)
				}
				continue
			}
			out = append(out, r)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].A.Run.WallStart.Before(out[j].A.Run.WallStart) })
	return out, nil
}

// runDirs returns d itself when it holds a journal, else its
// subdirectories that do.
func runDirs(d string) ([]string, error) {
	if _, err := os.Stat(filepath.Join(d, analysis.JournalFile)); err == nil {
		return []string{d}, nil
	}
	ents, err := os.ReadDir(d)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %s: no such directory", rehearse.ErrInvalid, d)
		}
		return nil, fmt.Errorf("%w: %s: %w", rehearse.ErrInvalid, d, err)
	}
	var out []string
	for _, e := range ents {
		p := filepath.Join(d, e.Name())
		if st, err := os.Stat(p); err == nil && st.IsDir() && e.Name() != "latest" {
			if _, err := os.Stat(filepath.Join(p, analysis.JournalFile)); err == nil {
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: %s is neither a run directory (no %s) nor an archive of runs", rehearse.ErrInvalid, d, analysis.JournalFile)
	}
	return out, nil
}

// LoadRun analyses a run directory and judges it, and in the same pass
// over its journal reads what the analysis does not keep: the compiled
// scenario, the drill digest, every request's send lateness and the
// platform samples.
func LoadRun(dir string) (*SideRun, error) {
	r := &SideRun{Dir: dir, Config: map[string]string{}}
	a, err := analysis.ReadDirWith(dir, r.observe)
	if err != nil {
		if !errors.Is(err, rehearse.ErrInvalid) {
			err = fmt.Errorf("%w: %w", rehearse.ErrInvalid, err)
		}
		return nil, err
	}
	verdict.JudgeRun(a)
	r.A = a
	if a.Run.Version != "" {
		r.Config["harness version"] = a.Run.Version
	}
	return r, nil
}

// observe reads one journal event for the figures the analysis does not
// keep (the event is transient: only copies are kept).
func (r *SideRun) observe(e journal.Event) {
	switch p := e.Payload.(type) {
	case *journal.RunStart:
		r.Digest = p.ScenarioDigest
		if len(p.Config) > 0 {
			var v any
			if json.Unmarshal(p.Config, &v) == nil {
				flatten("", v, r.Config)
			}
		}
	case *journal.ClientRequest:
		if p.Sent > 0 {
			r.Lateness = append(r.Lateness, durMs(max(p.Sent-p.Scheduled, 0)))
		}
	case *journal.PlatformSample:
		if t := p.Timer; t != nil {
			r.TimerP50 = append(r.TimerP50, durMs(t.P50))
			r.TimerP99 = append(r.TimerP99, durMs(t.P99))
		}
		if p.Load1 != nil {
			r.Load = append(r.Load, *p.Load1)
		}
	}
}

// flatten writes v's leaves as dotted keys, redacting secrets.
func flatten(prefix string, v any, out map[string]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			flatten(p, e, out)
		}
	case []any:
		for i, e := range x {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), e, out)
		}
	case nil:
	default:
		s := fmt.Sprint(x)
		if f, ok := x.(float64); ok {
			s = fmt.Sprintf("%g", f)
		}
		last := prefix[strings.LastIndexAny(prefix, ".]")+1:]
		switch {
		case redact.IsSecretName(last):
			s = redact.Marker
		case strings.Contains(s, "://"):
			s = redact.URL(s)
		}
		out[prefix] = s
	}
}
