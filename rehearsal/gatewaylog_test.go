package rehearsal

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse/journal"
)

// TestRunReadsGatewayLog: a scenario's gateway.log is tailed during the
// run, and each recognised line is in the journal as a metrics.sample of
// origin log, at the time written in the line. The log is written during
// the run (it does not exist when the run starts), as a gateway would.
func TestRunReadsGatewayLog(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "gw.log")
	sc := parse(t, fmt.Sprintf(`
name: gateway-log
gateway:
  builtin: {}
  metrics: {interval: 500ms}
  log:
    path: %s
    format: text
    poll: 50ms
    patterns:
      - {name: trip, match: '^(?P<time>\S+) breaker (?P<dependency>\S+) open$', state: open}
      - {name: reset, match: '^(?P<time>\S+) breaker (?P<dependency>\S+) closed$', state: closed}
replay:
  rate: 5
  duration: 3s
`, logPath))
	written := make(chan []time.Time, 1)
	go func() {
		var at []time.Time
		defer func() { written <- at }()
		time.Sleep(time.Second)
		f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return
		}
		defer f.Close()
		for _, st := range []string{"open", "closed"} {
			now := time.Now()
			fmt.Fprintf(f, "%s breaker search %s\n", now.UTC().Format(time.RFC3339Nano), st)
			at = append(at, now)
			time.Sleep(500 * time.Millisecond)
		}
	}()
	dir := filepath.Join(t.TempDir(), "run")
	if res, err := Run(context.Background(), sc, Options{OutDir: dir}); err != nil {
		skipIfStalled(t, res, err)
		t.Fatalf("run: %v", err)
	}
	at := <-written
	if len(at) != 2 {
		t.Fatal("the log writer did not write")
	}
	events := checkRunDir(t, dir)
	start := events[0].Payload.(*journal.RunStart).WallStart
	var got []string
	for _, ev := range events {
		s, ok := ev.Payload.(*journal.MetricsSample)
		if !ok || s.Origin != journal.OriginLog {
			continue
		}
		for _, b := range s.States {
			i := len(got)
			got = append(got, b.Upstream+" "+b.State)
			if i < len(at) {
				if d := ev.T - at[i].Sub(start); d < -time.Millisecond || d > time.Millisecond {
					t.Errorf("state %d at %v, its line says %v", i, ev.T, at[i].Sub(start))
				}
			}
		}
	}
	if fmt.Sprint(got) != "[search open search closed]" {
		t.Errorf("log states %v, want [search open search closed]", got)
	}
}
