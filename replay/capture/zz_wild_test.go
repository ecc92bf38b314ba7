package capture

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"
)

func TestZZWild(t *testing.T) {
	dir := os.Getenv("H20_WILD")
	if dir == "" {
		t.Skip()
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*"))
	sort.Strings(files)
	var tot, frag, reas, raw, resp int64
	for _, f := range files {
		start := time.Now()
		reqs, st, err := ReadFile(context.Background(), f, Options{})
		if d := time.Since(start); d > 2*time.Second {
			t.Logf("SLOW %s %v", f, d)
		}
		_ = err
		if st != nil {
			tot += int64(len(reqs))
			frag += st.Fragments
			reas += st.Reassembled
			raw += st.RawTargets
			resp += st.Responses
			if len(reqs) > 0 || st.Fragments > 0 {
				fmt.Printf("%s\t%d\t%d\t%d\t%d\t%v\t%v\n", filepath.Base(f), len(reqs), st.Incomplete, st.Fragments, st.Reassembled, st.FragmentsDropped, st.RequestsRefused)
			}
		}
	}
	t.Logf("requests %d fragments %d reassembled %d raw %d responses %d", tot, frag, reas, raw, resp)
}
