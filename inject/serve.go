package inject

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// ServeOptions are the options of Serve (`rehearse inject serve`).
type ServeOptions struct {
	// ConfigPath is the config file (upstreams, faults, seed); required.
	ConfigPath string
	// Control is the control API's listen address; "" disables it.
	// The API also serves the server's metrics at /metrics.
	Control string
	// JournalPath, when set, is where the journal is written.
	JournalPath string
	// Seed, when not nil, overrides the config's seed.
	Seed *int64
	// Out receives the addresses, one upstream a line; nil means discard.
	Out io.Writer
	// Logger is the logger; nil means slog.Default().
	Logger *slog.Logger
}

// LoadConfig reads and decodes a config file; errors name the file and,
// for bad content, the line and column ("FILE:3:5: ...").
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: config %s: no such file", rehearse.ErrInvalid, path)
		}
		return nil, fmt.Errorf("%w: config %s: %w", rehearse.ErrInvalid, path, err)
	}
	c, err := ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s:%w", path, err)
	}
	return c, nil
}

// Serve runs the upstreams of a config file standalone, for manual drills,
// until ctx is done; then it closes everything and returns nil.
func Serve(ctx context.Context, o ServeOptions) error {
	if o.ConfigPath == "" {
		return fmt.Errorf("%w: a config file is required (--config FILE)", rehearse.ErrInvalid)
	}
	cfg, err := LoadConfig(o.ConfigPath)
	if err != nil {
		return err
	}
	if o.Seed != nil {
		cfg.Seed = *o.Seed
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	log := o.Logger
	if log == nil {
		log = slog.Default()
	}
	clock := journal.NewClock(time.Now())
	var rec journal.Recorder = journal.Discard
	var jw *journal.Writer
	if o.JournalPath != "" {
		jw, err = journal.Create(o.JournalPath, clock)
		if err != nil {
			return fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
		}
		rec = jw
	}
	reg := prometheus.NewRegistry()
	s, err := New(cfg.Upstreams, cfg.Faults, WithClock(clock), WithRecorder(rec), WithSeed(cfg.Seed), WithRegisterer(reg), WithLogger(log))
	if err != nil {
		if jw != nil {
			jw.Close()
		}
		return fmt.Errorf("%s:%w", o.ConfigPath, err)
	}
	rec.Record(&journal.RunStart{Scenario: "inject serve", ScenarioFile: o.ConfigPath, Seed: cfg.Seed, WallStart: clock.Start(), Upstreams: s.Upstreams()})
	finish := func(reason string, runErr error) error {
		cerr := s.Close()
		end := &journal.RunEnd{Reason: reason}
		if runErr != nil {
			end.Error = runErr.Error()
		}
		rec.Record(end)
		if jw != nil {
			if err := jw.Close(); err != nil && runErr == nil {
				runErr = fmt.Errorf("%w: journal: %w", rehearse.ErrEnvironment, err)
			}
		}
		if runErr == nil && cerr != nil {
			runErr = fmt.Errorf("%w: closing upstreams: %w", rehearse.ErrEnvironment, cerr)
		}
		return runErr
	}
	if err := s.Start(ctx); err != nil {
		return finish(journal.EndFailed, err)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	for _, name := range s.Upstreams() {
		u := s.byName[name]
		addr := s.URL(name)
		if u.cfg.Mode == ModeTCP {
			addr = s.Addr(name) + " -> " + u.cfg.Target
		} else if u.cfg.Mode == ModeProxy {
			addr += " -> " + u.cfg.Target
		}
		fmt.Fprintf(tw, "upstream\t%s\t%s\t%s\n", name, u.cfg.Mode, addr)
	}
	ctlErr := make(chan error, 1)
	if o.Control != "" {
		ln, err := net.Listen("tcp", o.Control)
		if err != nil {
			tw.Flush()
			return finish(journal.EndFailed, fmt.Errorf("%w: control API: cannot listen on %s: %w", rehearse.ErrEnvironment, o.Control, err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/", s.ControlHandler())
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(tw, "control\t\t\thttp://%s (GET /faults, POST /faults, DELETE /faults, GET /metrics)\n", ln.Addr())
		go func() {
			err := srv.Serve(ln)
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			ctlErr <- err
		}()
		defer func() {
			srv.Close()
			<-ctlErr
		}()
	}
	tw.Flush()
	select {
	case <-ctx.Done():
		return finish(journal.EndInterrupted, nil)
	case err := <-ctlErr:
		ctlErr <- nil
		return finish(journal.EndFailed, fmt.Errorf("%w: control API: %w", rehearse.ErrEnvironment, err))
	}
}
