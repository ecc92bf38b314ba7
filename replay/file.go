package replay

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/redact"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

// File names in a replay's output directory.
const (
	JournalFile = "journal.jsonl"
	SummaryFile = "summary.json"
)

// FileRun is a standalone replay of a capture file, without faults or a
// gateway of the harness: what `rehearse replay` does.
type FileRun struct {
	// Capture is the pcap or pcapng file ("-" reads standard input).
	Capture string
	// CaptureOptions filter and rewrite the requests read. KeepSecrets is
	// ignored: SendCredentials decides.
	CaptureOptions capture.Options
	// SendCredentials sends the credentials the capture holds
	// (Authorization, Proxy-Authorization, Cookie, API-key headers, URL
	// user info, credential query parameters) as captured. False (the
	// default) replaces each with redact.Marker, as `rehearse run` does:
	// a production capture's credentials never reach a test gateway by
	// accident. Headers set with CaptureOptions.Rewrite are sent as
	// written either way; the journal never records headers.
	SendCredentials bool
	// Options configure the replay. An empty RunID gets a generated one.
	Options Options
	// OutDir, when set, receives journal.jsonl and summary.json; it is
	// created if missing.
	OutDir string
	// Progress, when set, shows the progress line (pass a terminal).
	Progress io.Writer
	// ProgressFunc, when set, receives the running counts instead
	// (WithProgressFunc), for a display of the caller's own.
	ProgressFunc func(Progress)
	// Summary, when set, receives the human summary at the end (the JSON
	// summary with SummaryJSON).
	Summary     io.Writer
	SummaryJSON bool
	// Version is recorded in run.start.
	Version string
}

// RunFile reads the capture, replays it, and writes the journal and the
// summary. When ctx is cancelled the partial summary is still written and
// printed, the journal is closed with a run.end marked interrupted, and
// the error wraps rehearse.ErrInterrupted.
func RunFile(ctx context.Context, fr FileRun) (*Summary, error) {
	// Bad options are reported before the capture is read.
	if _, err := fr.Options.withDefaults(); err != nil {
		return nil, err
	}
	copt := fr.CaptureOptions
	copt.KeepSecrets = fr.SendCredentials
	corpus, st, err := capture.ReadFile(ctx, fr.Capture, copt)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w: reading %s: %w", rehearse.ErrInterrupted, fr.Capture, err)
		}
		return nil, fmt.Errorf("replay: %s: %w", fr.Capture, err)
	}
	slog.Info("capture read", "file", fr.Capture, "stats", st.String())
	if len(corpus) == 0 {
		return nil, fmt.Errorf("%w: replay: %s holds no HTTP request to replay (%s)", rehearse.ErrInvalid, fr.Capture, st.String())
	}
	o := fr.Options
	if err := preflight(ctx, o); err != nil {
		return nil, err
	}
	if o.RunID == "" {
		o.RunID = NewRunID(time.Now())
	}

	clock := journal.NewClock(time.Now())
	var rec journal.Recorder = journal.Discard
	var jw *journal.Writer
	if fr.OutDir != "" {
		if err := os.MkdirAll(fr.OutDir, 0o755); err != nil {
			return nil, fmt.Errorf("%w: replay: output directory: %w", rehearse.ErrEnvironment, err)
		}
		jw, err = journal.Create(filepath.Join(fr.OutDir, JournalFile), clock)
		if err != nil {
			return nil, fmt.Errorf("%w: replay: %w", rehearse.ErrEnvironment, err)
		}
		defer jw.Close()
		rec = jw
	}
	opts := []Option{WithRecorder(rec), WithClock(clock)}
	switch {
	case fr.ProgressFunc != nil:
		opts = append(opts, WithProgressFunc(fr.ProgressFunc))
	case fr.Progress != nil:
		opts = append(opts, WithProgress(fr.Progress))
	}
	r, err := New(corpus, o, opts...)
	if err != nil {
		if jw != nil {
			jw.Close()
			os.Remove(filepath.Join(fr.OutDir, JournalFile))
		}
		return nil, err
	}
	cfg, _ := json.Marshal(struct {
		Capture string  `json:"capture"`
		Replay  Options `json:"replay"`
	}{fr.Capture, r.opt})
	rec.Record(&journal.RunStart{
		RunID:     o.RunID,
		Scenario:  "replay",
		Seed:      r.opt.Seed,
		WallStart: clock.Start(),
		Version:   fr.Version,
		Target:    redact.URL(r.opt.Target.String()),
		Rate:      rateOf(&r.opt),
		Duration:  r.opt.Duration,
		Platform: &journal.Platform{OS: runtime.GOOS, Arch: runtime.GOARCH, NumCPU: runtime.NumCPU(),
			GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version()},
		Config: cfg,
	})
	rec.Record(&journal.Phase{Name: "replay", Detail: fmt.Sprintf("%d requests from %s", len(corpus), fr.Capture)})

	sum, runErr := r.Run(ctx)
	end := &journal.RunEnd{Reason: journal.EndCompleted}
	if runErr != nil {
		end = &journal.RunEnd{Reason: journal.EndInterrupted, Partial: true, Error: runErr.Error()}
	}
	rec.Record(end)
	var errs []error
	if jw != nil {
		if err := jw.Close(); err != nil {
			errs = append(errs, fmt.Errorf("%w: replay: %w", rehearse.ErrEnvironment, err))
		}
		if err := writeJSONAtomic(filepath.Join(fr.OutDir, SummaryFile), sum); err != nil {
			errs = append(errs, fmt.Errorf("%w: replay: %w", rehearse.ErrEnvironment, err))
		}
	}
	if fr.Summary != nil {
		var err error
		if fr.SummaryJSON {
			enc := json.NewEncoder(fr.Summary)
			enc.SetIndent("", "  ")
			err = enc.Encode(sum)
		} else {
			err = sum.WriteText(fr.Summary)
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if runErr != nil {
		errs = append([]error{fmt.Errorf("%w: %w", rehearse.ErrInterrupted, runErr)}, errs...)
	}
	return sum, errors.Join(errs...)
}

// MarshalJSON writes Options for the record in run.start: durations as
// strings, the transport left out.
func (o Options) MarshalJSON() ([]byte, error) {
	target := ""
	if o.Target != nil {
		target = redact.URL(o.Target.String())
	}
	return json.Marshal(struct {
		Target         string            `json:"target"`
		Rate           float64           `json:"rate"`
		Duration       rehearse.Duration `json:"duration"`
		Once           bool              `json:"once,omitempty"`
		Timing         string            `json:"timing"`
		Speed          float64           `json:"speed,omitempty"`
		Schedule       string            `json:"schedule,omitempty"`
		MaxInFlight    int               `json:"max_in_flight"`
		Deadline       rehearse.Duration `json:"deadline"`
		ConnectTimeout rehearse.Duration `json:"connect_timeout"`
		LateThreshold  rehearse.Duration `json:"late_threshold"`
		SeqHeader      string            `json:"seq_header"`
		RunHeader      string            `json:"run_header"`
		RunID          string            `json:"run_id,omitempty"`
		PreserveHost   bool              `json:"preserve_host,omitempty"`
		AllowWrites    bool              `json:"allow_writes"`
		Routes         []RouteMap        `json:"routes,omitempty"`
		FastFail       FastFailRule      `json:"fast_fail"`
		IdemKeys       *IdempotencyKeys  `json:"idempotency_keys,omitempty"`
		DeadlineHeader string            `json:"deadline_header,omitempty"`
		Identity       Identity          `json:"identity"`
		KeepHeaders    []string          `json:"keep_headers,omitempty"`
	}{target, o.Rate, rehearse.Duration(o.Duration), o.Once, o.Timing, o.Speed, scheduleOf(&o), o.MaxInFlight,
		rehearse.Duration(o.Deadline), rehearse.Duration(o.ConnectTimeout), rehearse.Duration(o.LateThreshold),
		o.SeqHeader, o.RunHeader, o.RunID, o.PreserveHost, o.AllowWrites, o.Routes, o.FastFail, idemKeys(&o), o.DeadlineHeader, o.Identity, o.KeepHeaders})
}

func idemKeys(o *Options) *IdempotencyKeys {
	if o.IdempotencyKeys.Share == 0 {
		return nil
	}
	return &o.IdempotencyKeys
}

// scheduleOf is the schedule the sends kept: none in original timing.
func scheduleOf(o *Options) string {
	if o.Timing == TimingOriginal {
		return ""
	}
	return o.Schedule
}

func rateOf(o *Options) float64 {
	if o.Timing == TimingOriginal {
		return 0
	}
	return o.Rate
}

// NewRunID returns a run id: the UTC start time and 4 random bytes, so
// that ids sort by time and never collide between machines.
func NewRunID(t time.Time) string {
	var b [4]byte
	rand.Read(b[:])
	return t.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// writeJSONAtomic writes v as indented JSON to path through a temporary
// file, synced and renamed, so a reader never sees half a file.
func writeJSONAtomic(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// preflight checks that the target accepts connections before a
// standalone replay starts: a gateway that is down at the start is a
// harness failure (exit 3), not five minutes of connect_refused.
func preflight(ctx context.Context, o Options) error {
	if o.Target == nil || o.Target.Host == "" {
		return nil // New reports it
	}
	addr := o.Target.Host
	if o.Target.Port() == "" {
		port := "80"
		if o.Target.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(o.Target.Hostname(), port)
	}
	timeout := o.ConnectTimeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	d := net.Dialer{Timeout: timeout}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("%w: replay: target %s is unreachable: %w", rehearse.ErrEnvironment, redact.URL(o.Target.String()), err)
	}
	return c.Close()
}
