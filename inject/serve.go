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
	// AllowRemote lets the control API and the upstreams listen on
	// addresses other machines can reach. Whoever reaches the control
	// API can inject faults, so without AllowRemote a non-loopback
	// address is refused, and with it the API requires a token.
	AllowRemote bool
	// Token, when set, must be sent as "Authorization: Bearer TOKEN" on
	// every control API request. "" requires none on loopback; on an
	// address other machines can reach (AllowRemote) one is generated
	// and printed with the control API's address.
	Token string
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
	if !o.AllowRemote {
		if err := loopbackOnly(o.Control, cfg.Upstreams); err != nil {
			return err
		}
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
		ln, err := rehearse.Listen(o.Control)
		if err != nil {
			tw.Flush()
			return finish(journal.EndFailed, fmt.Errorf("%w: control API: cannot listen on %s: %w", rehearse.ErrEnvironment, o.Control, err))
		}
		mux := http.NewServeMux()
		mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		mux.Handle("/", s.ControlHandler())
		token, generated, err := controlToken(o.Token, ln.Addr())
		if err != nil {
			ln.Close()
			tw.Flush()
			return finish(journal.EndFailed, fmt.Errorf("%w: control API: %w", rehearse.ErrEnvironment, err))
		}
		guard := NewControlGuard(ln.Addr(), o.Control, token)
		if !isLoopback(ln.Addr()) {
			guard.Names = append(guard.Names, machineNames()...)
		}
		srv := &http.Server{Handler: guard.Wrap(mux), ReadHeaderTimeout: 10 * time.Second}
		fmt.Fprintf(tw, "control\t\t\thttp://%s (GET /faults, POST /faults, DELETE /faults, GET /metrics)\n", ln.Addr())
		switch {
		case generated:
			// Printed once, here, for the person who started it: the
			// API is reachable from other machines and needs it.
			fmt.Fprintf(tw, "token\t\t\t%s (send \"Authorization: Bearer TOKEN\" with every control API request)\n", token)
		case token != "":
			fmt.Fprintf(tw, "token\t\t\trequired (the one given; send \"Authorization: Bearer TOKEN\")\n")
		}
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
		// Stopped by a signal, as it is meant to be: still exit code 130,
		// so that a script can tell it from a clean exit.
		if err := finish(journal.EndInterrupted, nil); err != nil {
			return err
		}
		return fmt.Errorf("%w: inject serve stopped", rehearse.ErrInterrupted)
	case err := <-ctlErr:
		ctlErr <- nil
		return finish(journal.EndFailed, fmt.Errorf("%w: control API: %w", rehearse.ErrEnvironment, err))
	}
}

// loopbackOnly refuses a control API or upstream listen address that
// other machines can reach ("" and "0.0.0.0" mean every interface).
func loopbackOnly(control string, upstreams []UpstreamConfig) error {
	check := func(what, addr string) error {
		if _, _, err := net.SplitHostPort(addr); err != nil {
			return fmt.Errorf("%w: %s %q: want host:port", rehearse.ErrInvalid, what, addr)
		}
		if rehearse.CheckLoopback(addr) == nil { // the one rule of every listener
			return nil
		}
		return fmt.Errorf("%w: %s %s is not a loopback address: the upstreams answer anyone and the control API injects faults for whoever reaches it, so other machines must not reach them; give --allow-remote to listen there anyway (the control API then requires a token)", rehearse.ErrInvalid, what, addr)
	}
	if control != "" {
		if err := check("--control", control); err != nil {
			return err
		}
	}
	for _, u := range upstreams {
		if u.Listen == "" {
			continue // 127.0.0.1:0
		}
		if err := check(fmt.Sprintf("upstream %s listen", u.Name), u.Listen); err != nil {
			return err
		}
	}
	return nil
}
