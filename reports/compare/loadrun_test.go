package compare

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/halfopen/rehearse/reports/analysis"
)

// TestLoadRunReadsTheJournalOnce: a comparison reads each run's journal
// in one pass, the analysis and compare's own figures (send lateness,
// platform samples, the scenario) together. The journal here is a FIFO,
// which can be read once: a second open would wait for a writer forever.
func TestLoadRunReadsTheJournalOnce(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "testdata", "clean.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, analysis.JournalFile)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	go func() {
		w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		w.Write(raw)
		w.Close()
	}()
	type result struct {
		r   *SideRun
		err error
	}
	done := make(chan result, 1)
	go func() {
		r, err := LoadRun(dir)
		done <- result{r, err}
	}()
	select {
	case res := <-done:
		if res.err != nil {
			t.Fatal(res.err)
		}
		r := res.r
		if r.A == nil || len(r.A.Upstreams) == 0 || len(r.Lateness) == 0 || len(r.Config) < 2 {
			t.Errorf("one pass read analysis %v, %d lateness samples, %d config keys: want all of them",
				r.A != nil, len(r.Lateness), len(r.Config))
		}
		if r.A != nil && r.A.Expected != nil && len(r.A.Expectations) == 0 {
			t.Errorf("the run was not judged")
		}
	case <-time.After(60 * time.Second):
		// Let the second open through so that the goroutine ends.
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.Close()
		}
		t.Fatal("LoadRun opened the journal a second time")
	}
}
