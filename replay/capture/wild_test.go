package capture

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestOddTargets reads a real capture (scripts/wildcaptures.sh) of
// requests whose targets Go's URL parser refuses: every one comes out,
// with its target as written and the parser's reason, and tshark agrees.
func TestOddTargets(t *testing.T) {
	path := filepath.Join("testdata", "odd-targets.pcap")
	reqs, st, err := ReadFile(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var got, raw []string
	for _, r := range reqs {
		got = append(got, r.Target)
		if r.TargetError != "" {
			raw = append(raw, r.Target)
		}
	}
	want := []string{"/%", "/%5", "/files/a%zz.txt?q=%41", "/caf\xc3\xa9", "/healthz", "/search?q=100%", "/%E0%A4%A"}
	if !slices.Equal(got, want) {
		t.Errorf("targets %q, want %q", got, want)
	}
	if w := []string{"/%", "/%5", "/files/a%zz.txt?q=%41", "/%E0%A4%A"}; !slices.Equal(raw, w) || st.RawTargets != 4 || st.Incomplete != 0 {
		t.Errorf("raw targets %q (%d), want %q; %d incomplete", raw, st.RawTargets, w, st.Incomplete)
	}
	compareTshark(t, path, reqs, false, "")
}
