//go:build linux || darwin

package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// progressRow matches the status line of rehearse run on a terminal.
var (
	progressRow = regexp.MustCompile(`^\d+:\d\d/\d+:\d\d sent \d+ ok \d+ failed \d+`)
	statusText  = regexp.MustCompile(`\d+:\d\d/\d+:\d\d sent \d+ ok \d+`)
)

// TestProgressLineOnTerminal runs a short real rehearsal in a real
// terminal (tmux, at 60 and 160 columns) and reads the screen while it
// runs and after: the status line is one row at the bottom, never longer
// than the terminal, never mixed with a log line, and never left behind
// by a refresh; it shows the fault window and the watched breaker.
func TestProgressLineOnTerminal(t *testing.T) {
	t.Parallel() // real processes in its own directories; waits on their timers
	if testing.Short() {
		t.Skip("builds the binary and runs two rehearsals")
	}
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Skip("tmux not installed (Debian package tmux): the terminal test needs a real terminal")
	}
	dir := t.TempDir()
	bin := rehearseBinary(t)
	sc := filepath.Join(dir, "short.yaml")
	src := `version: 1
name: tty
gateway: {builtin: {}}
replay: {rate: 20, duration: 6s}
faults:
  - {name: search-503, type: status, upstream: search, at: 1s, for: 3s, params: {code: 503}}
expectations: {upstreams: [search], opens_within: 3s}
`
	if err := os.WriteFile(sc, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	// The four runs go side by side: each has its own tmux server
	// (socket), run directory and ports, and mostly waits on its replay.
	// Off a terminal (stderr a file), no status line: plain logs.
	t.Run("not a terminal", func(t *testing.T) {
		t.Parallel()
		cmd := exec.Command(bin, "run", sc, "--out", filepath.Join(dir, "run-file"))
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil {
			t.Fatalf("run: %v\n%s\n%s", err, out, stderr.String())
		}
		if strings.ContainsAny(stderr.String(), "\r\x1b") || strings.Contains(stderr.String(), " sent ") {
			t.Errorf("a status line was drawn off a terminal:\n%q", stderr.String())
		}
		if !strings.Contains(stderr.String(), `msg="fault start"`) {
			t.Errorf("the log is missing:\n%s", stderr.String())
		}
	})
	for _, tc := range []struct{ width, resizeTo int }{{60, 0}, {160, 0}, {160, 60}} {
		width := tc.width
		name := fmt.Sprint(width)
		if tc.resizeTo > 0 {
			name = fmt.Sprintf("%d to %d", width, tc.resizeTo)
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			sock := filepath.Join(dir, fmt.Sprintf("tmux-%d-%d", width, tc.resizeTo))
			tmux := func(args ...string) (string, error) {
				cmd := exec.Command("tmux", append([]string{"-S", sock}, args...)...)
				cmd.Env = append(os.Environ(), "TERM=xterm-256color")
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			run := fmt.Sprintf("%s run %s --out %s 2>&1; echo EXIT=$?; sleep 120", bin, sc, filepath.Join(dir, fmt.Sprintf("run-%d-%d", width, tc.resizeTo)))
			if out, err := tmux("-f", "/dev/null", "new-session", "-d", "-x", fmt.Sprint(width), "-y", "40", run); err != nil {
				t.Fatalf("tmux new-session: %v\n%s", err, out)
			}
			t.Cleanup(func() { _, _ = tmux("kill-server") })
			// The pane's own width: tmux may not give a detached session
			// the size asked for.
			if out, err := tmux("display-message", "-p", "#{pane_width}"); err != nil || strings.TrimSpace(out) != fmt.Sprint(width) {
				t.Fatalf("pane width %q, %v: want %d", out, err, width)
			}

			var during, sawFault, sawBreaker int
			var settle time.Time
			deadline := time.Now().Add(90 * time.Second)
			var final string
			for time.Now().Before(deadline) {
				time.Sleep(200 * time.Millisecond)
				screen, err := tmux("capture-pane", "-p", "-J")
				if err != nil {
					t.Fatalf("capture-pane: %v", err)
				}
				if strings.Contains(screen, "EXIT=") {
					final = screen
					break
				}
				rows := nonEmpty(screen)
				if len(rows) == 0 || !progressRow.MatchString(rows[len(rows)-1]) {
					continue // not replaying yet
				}
				during++
				if time.Now().Before(settle) {
					continue // the first redraw after the resize may not have come
				}
				checkScreen(t, width, rows, true)
				if tc.resizeTo > 0 && during == 3 {
					// The window narrows under a drawn line: the
					// terminal reflows it onto several rows, all of
					// which must go.
					if out, err := tmux("resize-window", "-x", fmt.Sprint(tc.resizeTo)); err != nil {
						t.Fatalf("tmux resize-window: %v\n%s", err, out)
					}
					width = tc.resizeTo
					settle = time.Now().Add(2 * time.Second)
				}
				last := rows[len(rows)-1]
				if strings.Contains(last, "search:status") {
					sawFault++
				}
				if strings.Contains(last, "search=") {
					sawBreaker++
				}
			}
			if final == "" {
				t.Fatal("the run did not end within 90s")
			}
			if !strings.Contains(final, "EXIT=0") {
				t.Errorf("run failed:\n%s", final)
			}
			if during == 0 {
				t.Fatalf("no screen showed the status line while the run replayed:\n%s", final)
			}
			if tc.resizeTo > 0 && width != tc.resizeTo {
				t.Fatalf("the run ended before the window was resized (%d screens)", during)
			}
			if width == 160 && (sawFault == 0 || sawBreaker == 0) {
				t.Errorf("at 160 columns the status line never showed the fault (%d) or the breaker (%d)", sawFault, sawBreaker)
			}
			// The whole history: one status line kept (the last draw,
			// above the results), none left behind by a refresh.
			hist, err := tmux("capture-pane", "-p", "-J", "-S", "-")
			if err != nil {
				t.Fatal(err)
			}
			checkScreen(t, width, nonEmpty(hist), false)
		})
	}
}

// checkScreen holds the rows of a terminal to the display's rules: no row
// wider than the terminal, the status line in one row (exactly once; at
// the bottom while the run replays), no log line holding status text.
func checkScreen(t *testing.T, width int, rows []string, running bool) {
	t.Helper()
	n := 0
	for i, r := range rows {
		isStatus := progressRow.MatchString(r)
		if isStatus {
			n++
			if w := len([]rune(r)); w >= width {
				t.Errorf("status line of %d columns on a %d-column terminal: %q", w, width, r)
			}
			if running && i != len(rows)-1 {
				t.Errorf("status line in row %d of %d, not at the bottom:\n%s", i+1, len(rows), strings.Join(rows, "\n"))
			}
		}
		if isStatus && strings.Contains(r, "level=") {
			t.Errorf("a log line was written into the status line: %q", r)
		}
		if !isStatus && statusText.MatchString(r) {
			t.Errorf("status text inside another line: %q", r)
		}
	}
	if n != 1 {
		t.Errorf("%d status lines on the screen, want exactly 1:\n%s", n, strings.Join(rows, "\n"))
	}
}

func nonEmpty(screen string) []string {
	var rows []string
	for _, r := range strings.Split(screen, "\n") {
		if strings.TrimSpace(r) != "" {
			rows = append(rows, strings.TrimRight(r, " "))
		}
	}
	return rows
}
