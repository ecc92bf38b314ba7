package rehearsal

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/internal/atomicfile"
	"github.com/halfopen/rehearse/internal/runs"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/replay"
	"github.com/halfopen/rehearse/replay/capture"
	"github.com/halfopen/rehearse/reports"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
	"github.com/halfopen/rehearse/reports/render"
	"github.com/halfopen/rehearse/scenarios"
)

// DefaultStopTimeout bounds how long stopping each component may take
// after the replay ends or is interrupted.
const DefaultStopTimeout = 5 * time.Second

// Options are the conductor's settings beyond the scenario. Zero values
// mean the documented defaults.
type Options struct {
	// OutDir is the run directory; "" means a new runs/<UTC date>-<scenario>
	// (runs.Archive.NewRun on runs/). It is created and claimed for the run (runs.ClaimDir):
	// a directory that holds a run, or that another run is recording
	// into, is refused, so that no run is ever overwritten or shared.
	OutDir string
	// Claim is a run directory the caller claimed already (an archive's,
	// runs.Archive.NewRun); OutDir is then ignored. The run marks it
	// complete when its reports are written, or abandons it when it
	// never started; the caller releases it (runs.Archive.Finish). Nil
	// means the run claims OutDir itself and releases it when it ends.
	Claim *runs.Claim
	// JUnitPath, if set, receives a copy of junit.xml.
	JUnitPath string
	// Version is the harness version recorded in run.start.
	Version string
	// Status shows the run's status line while it replays (a terminal's
	// bottom line: internal/tty.Display, with the log written through
	// it): elapsed and planned time, sent/ok/failed, the fault windows
	// open, each watched upstream's breaker; nil means none.
	Status StatusLine
	// Logger logs the run's steps; nil means slog.Default().
	Logger *slog.Logger
	// Registerer receives the harness's own metrics; nil means a private
	// registry.
	Registerer prometheus.Registerer
	// Now is the wall clock for naming the run directory; nil means time.Now.
	Now func() time.Time
	// Plan is the scenario's Check, when the caller made it already (to
	// refuse a bad capture before it creates anything of its own, such as
	// an archive entry); nil means Run checks the scenario itself. It
	// must be a Plan of the scenario given to Run.
	Plan *Plan
}

// Result is what a run produced.
type Result struct {
	// Dir is the run directory.
	Dir string
	// Partial reports that the run stopped before its planned end.
	Partial bool
	// Replay is the replayer's summary; nil when the replay never started.
	Replay *replay.Summary
	// Analysis and Expectations come from the reports. When the reports
	// could not be written, Analysis says so as a harness failure (nil
	// when the journal could not even be read).
	Analysis     *analysis.Analysis
	Expectations []expect.ExpectationResult
	// Complete reports that the whole set of reports was written and the
	// run marked complete (runs.Claim.Complete): only then is it
	// `latest`, linked from the history index and counted by retention.
	Complete bool
}

// Failed returns the expectations that did not pass.
func (r *Result) Failed() []expect.ExpectationResult {
	var out []expect.ExpectationResult
	for _, e := range r.Expectations {
		if !e.Passed {
			out = append(out, e)
		}
	}
	return out
}

// Run runs the scenario end to end and writes the run directory. The error
// says how it ended: nil when every expectation was met; wrapping
// rehearse.ErrExpectations when one failed; rehearse.ErrInterrupted when
// ctx was cancelled (the journal is complete up to that moment, the run is
// marked partial and the reports are still written); rehearse.ErrInvalid
// or rehearse.ErrEnvironment when it could not run. The Result is non-nil
// whenever the run started (its journal exists); a run that failed before
// leaves no directory it created.
func Run(ctx context.Context, sc *scenarios.Scenario, opt Options) (*Result, error) {
	c := &conductor{sc: sc, opt: opt, log: opt.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.opt.Now == nil {
		c.opt.Now = time.Now
	}
	c.reg = opt.Registerer
	if c.reg == nil {
		c.reg = prometheus.NewRegistry()
	}
	res, err := c.run(ctx)
	switch {
	case c.opt.Claim == nil:
		c.claim.Release() // ours: the run is over
	case res == nil:
		c.opt.Claim.Abandon() // the run never started: nothing to keep
	}
	return res, err
}

// IdentityOf is what a run of sc is a run of, for runs.Archive.NewRun:
// the name and file the journal's run.start records.
func IdentityOf(sc *scenarios.Scenario) (runs.Identity, error) {
	start, err := sc.RunStart()
	if err != nil {
		return runs.Identity{}, err
	}
	return runs.Identity{Scenario: start.Scenario, File: start.ScenarioFile}, nil
}

// conductor holds one run's moving parts, so that stop can undo exactly
// what start did, in reverse order.
type conductor struct {
	sc  *scenarios.Scenario
	opt Options
	log *slog.Logger
	reg prometheus.Registerer

	dir     string
	claim   *runs.Claim
	clock   *journal.Clock
	journal *journal.Writer
	// rec is where the components record: the journal, behind the live
	// view of the status line when there is one.
	rec         journal.Recorder
	live        *live
	inject      *inject.Server
	redis       *redisServer
	gateways    []*gateway.Gateway
	front       *http.Server
	gwURLs      []string
	gwListeners []net.Listener
	target      string
	runID       string
	scrapers    []*observe.Scraper
	obsStop     context.CancelFunc
	obsWG       sync.WaitGroup
	// unwatch stops recording the moment of an interruption (watch).
	unwatch func()
}

func (c *conductor) run(ctx context.Context) (res *Result, err error) {
	// The input is read before anything is created: a capture with nothing
	// to replay leaves no run directory behind.
	plan := c.opt.Plan
	if plan == nil || plan.Scenario != c.sc {
		if plan, err = Check(ctx, c.sc); err != nil {
			return nil, err
		}
	}
	corpus := plan.corpus
	c.log.Info("capture loaded", "capture", plan.Capture, "requests", plan.Replayable, "stats", plan.Stats.String())
	start, err := c.sc.RunStart()
	if err != nil {
		return nil, err
	}
	start.Resolved = reports.Resolve(start.Config)
	if c.claim, err = c.claimDir(runs.Identity{Scenario: start.Scenario, File: start.ScenarioFile}); err != nil {
		return nil, err
	}
	dir := c.claim.Dir()
	// Until the journal exists, a failure leaves nothing to read: the
	// directory made for the run goes again.
	abandon := func() {
		c.stop()
		c.claim.Abandon()
	}
	c.dir = dir
	// Platform facts take a few hundred milliseconds (timer granularity);
	// measure them before the clock starts so they cost the run nothing.
	platform := observe.Facts(ctx)
	// Redis and the gateway's listeners come first, so that run.start,
	// the journal's first event, can name the target.
	if err := c.prepare(ctx); err != nil {
		abandon()
		return nil, err
	}

	c.clock = journal.NewClock(time.Now())
	c.journal, err = journal.Create(filepath.Join(dir, "journal.jsonl"), c.clock)
	if err != nil {
		abandon()
		return nil, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err)
	}
	c.rec = c.journal
	if c.opt.Status != nil {
		c.live = newLive(c.journal, c.clock, c.sc)
		c.rec = c.live
	}
	res = &Result{Dir: dir}
	c.recordStart(start, &platform)
	c.watch(ctx)
	// From here on, whatever happens, the journal gets a run.end and the
	// reports are written from it.
	var (
		summary *replay.Summary
		runErr  error
	)
	defer func() {
		res.Replay = summary
		res.Partial = runErr != nil
		err = c.finish(res, runErr)
	}()

	runErr = c.start(ctx)
	if runErr != nil {
		return res, nil
	}
	summary, runErr = c.replay(ctx, corpus)
	return res, nil
}

// watch records the moment ctx is cancelled (Ctrl-C, SIGTERM, SIGHUP) as
// the phase "interrupted", before anything stops: the reports say when the
// run was interrupted, and which requests it cut, from that moment, not
// from the end of the stopping that follows. c.unwatch ends the watch
// before the journal closes.
func (c *conductor) watch(ctx context.Context) {
	done := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(done)
		c.journal.Record(&journal.Phase{Name: analysis.PhaseInterrupted, Detail: "the run's context was cancelled (Ctrl-C, SIGTERM or SIGHUP)"})
	})
	c.unwatch = func() {
		if !stop() {
			<-done // recording now, or recorded: the journal waits for it
		}
	}
}

// claimDir returns the run directory, claimed for the run: the caller's
// claim, or --out claimed here (refused when it holds a run or another run
// is recording into it), or a new directory under runs/, named by the one
// rule of run directories (runs.DirName).
func (c *conductor) claimDir(id runs.Identity) (*runs.Claim, error) {
	switch {
	case c.opt.Claim != nil:
		return c.opt.Claim, nil
	case c.opt.OutDir == "":
		// Under runs/'s lock, as in any archive: the bookkeeping of an
		// `--archive runs` never sweeps a directory made but not yet
		// claimed.
		return runs.Archive{Dir: runs.DefaultDir}.NewRun(id, c.opt.Now())
	}
	return runs.ClaimDir(c.opt.OutDir, id)
}

// prepare starts Redis for a fleet and binds the built-in gateways'
// listeners (and the fleet's front), so the target is known before the
// journal opens.
func (c *conductor) prepare(ctx context.Context) error {
	b := c.sc.Gateway.Builtin
	if b == nil {
		c.target = strings.TrimRight(c.sc.Gateway.URL, "/")
		return nil
	}
	if b.Redis == "auto" {
		rs, err := startRedis(ctx)
		if err != nil {
			return err
		}
		c.redis = rs
	}
	listen := c.sc.GatewayListen()
	for i := 0; i < b.Instances; i++ {
		ln, err := rehearse.Listen(listen)
		if err != nil {
			return fmt.Errorf("%w: built-in gateway: listen %s: %w", rehearse.ErrEnvironment, listen, err)
		}
		c.gwListeners = append(c.gwListeners, ln)
		c.gwURLs = append(c.gwURLs, "http://"+ln.Addr().String())
	}
	c.target = c.gwURLs[0]
	if b.Instances > 1 {
		front, url, err := startFront(c.gwURLs)
		if err != nil {
			return err
		}
		c.front, c.target = front, url
	}
	return nil
}

// recordStart writes run.start, the journal's first event: the
// scenario's part, and the run's own.
func (c *conductor) recordStart(start *journal.RunStart, platform *journal.Platform) {
	c.runID = runID(c.clock.Start())
	start.RunID = c.runID
	start.WallStart = c.clock.Start().UTC()
	start.TimeZone = journal.LocalZone(c.clock.Start())
	start.Version = c.opt.Version
	start.Target = c.target
	start.Platform = platform
	c.journal.Record(start)
}

// start brings up the upstreams, the gateway and the observers, and waits
// for the gateway to answer.
func (c *conductor) start(ctx context.Context) error {
	sc := c.sc
	harnessRedis, redisAddr := "", ""
	if c.redis != nil {
		harnessRedis = c.redis.URL()
		if u, err := url.Parse(harnessRedis); err == nil {
			redisAddr = u.Host
		}
	}
	// Faults are added when the replay starts, so that "at: 30s" means 30
	// seconds into the replay whatever the setup took.
	inj, err := inject.New(sc.InjectUpstreams(redisAddr), nil,
		inject.WithRecorder(c.rec), inject.WithClock(c.clock), inject.WithSeed(*sc.Seed),
		inject.WithRegisterer(c.reg), inject.WithLogger(c.log))
	if err != nil {
		return err
	}
	if err := inj.Start(ctx); err != nil {
		return err
	}
	c.inject = inj

	if b := sc.Gateway.Builtin; b != nil {
		relay := ""
		if b.RedisUpstream != "" {
			relay = inj.Addr(b.RedisUpstream)
		}
		if err := c.startGateways(sc.GatewayConfig(inj.URL, sc.GatewayCoord(harnessRedis, relay))); err != nil {
			return err
		}
	}

	ready := sc.ReadyCheck(c.target)
	client := &http.Client{Timeout: 2 * time.Second}
	if err := waitReady(ctx, client, ready.URL, ready.Timeout, ready.Require2xx); err != nil {
		return err
	}
	c.journal.Record(&journal.Phase{Name: "ready", Detail: "gateway answers at " + ready.URL})
	return c.startObservers(ctx)
}

// startGateways serves the built-in gateway instances on the listeners
// prepare bound.
func (c *conductor) startGateways(cfg gateway.Config) error {
	for i, ln := range c.gwListeners {
		g, err := gateway.New(cfg,
			gateway.WithRecorder(c.rec), gateway.WithLogger(c.log),
			gateway.WithInstance(fmt.Sprintf("gw%d", i)), gateway.WithSeed(uint64(*c.sc.Seed)+uint64(i)))
		if err != nil {
			return err
		}
		c.gateways = append(c.gateways, g)
		go func() {
			if err := g.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
				c.log.Error("built-in gateway stopped", "err", err)
			}
		}()
	}
	c.gwListeners = nil // owned by the gateways now
	return nil
}

// startObservers starts metrics scraping, the gateway log observer and the
// health canary; they run until stopObservers.
func (c *conductor) startObservers(ctx context.Context) error {
	obsCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	c.obsStop = cancel
	names := c.inject.Upstreams()
	// Timer lateness and load throughout the run, not only before it: a
	// comparison of platforms needs what the timers did while the breaker
	// was timing its cooldowns.
	ps := observe.NewPlatformSampler(0, observe.WithRecorder(c.rec), observe.WithClock(c.clock))
	c.obsWG.Add(1)
	go func() { defer c.obsWG.Done(); _ = ps.Run(obsCtx) }()
	for _, mc := range c.sc.ScrapeConfigs(c.gwURLs) {
		s, err := observe.NewScraper(mc, observe.WithRecorder(c.rec), observe.WithClock(c.clock),
			observe.WithLogger(c.log), observe.WithUpstreams(names...))
		if err != nil {
			return err
		}
		c.scrapers = append(c.scrapers, s)
		c.obsWG.Add(1)
		go func() { defer c.obsWG.Done(); _ = s.Run(obsCtx) }()
	}
	if lc := c.sc.LogConfig(); lc != nil {
		// The gateway's log as a state source: read from now on, each
		// state stamped with its line's time.
		lo, err := observe.NewLogObserver(*lc, observe.WithRecorder(c.rec), observe.WithClock(c.clock),
			observe.WithLogger(c.log), observe.WithUpstreams(names...))
		if err != nil {
			return err
		}
		c.obsWG.Add(1)
		go func() { defer c.obsWG.Done(); _ = lo.Run(obsCtx) }()
	}
	if health := c.sc.HealthConfig(c.target); health != nil {
		cn, err := observe.NewCanary(*health, observe.WithRecorder(c.rec), observe.WithClock(c.clock), observe.WithLogger(c.log))
		if err != nil {
			return err
		}
		c.obsWG.Add(1)
		go func() { defer c.obsWG.Done(); _ = cn.Run(obsCtx) }()
	}
	return nil
}

// replay adds the fault timeline and runs the replay.
func (c *conductor) replay(ctx context.Context, corpus *capture.Corpus) (*replay.Summary, error) {
	sc := c.sc
	target, err := url.Parse(c.target)
	if err != nil {
		return nil, fmt.Errorf("%w: gateway URL %q: %w", rehearse.ErrInvalid, c.target, err)
	}
	opts := sc.ReplayOptions(target, c.runID)
	var ropts []replay.Option
	ropts = append(ropts, replay.WithRecorder(c.rec), replay.WithClock(c.clock), replay.WithRegisterer(c.reg))
	if c.live != nil {
		ropts = append(ropts, replay.WithProgressFunc(c.live.setReplay))
	}
	rp, err := replay.NewFrom(corpus, opts, ropts...)
	if err != nil {
		return nil, err
	}
	if c.live != nil {
		c.opt.Status.Start(c.live.Line)
		defer c.opt.Status.Stop()
	}
	if wopts, ok := sc.WarmupOptions(target, c.runID); ok {
		if err := c.warmup(ctx, corpus, wopts); err != nil {
			return nil, err
		}
	}
	// Time zero: the faults count from here, and the analysis scores
	// from here on.
	c.journal.Record(&journal.Phase{Name: "replay", Detail: fmt.Sprintf("%d requests in the corpus", corpus.Len())})
	for _, f := range sc.Faults {
		if _, err := c.inject.AddFault(f); err != nil {
			return nil, err
		}
	}
	return rp.Run(ctx)
}

// warmup replays the scenario's warm-up before time zero: no fault, its
// requests journaled as warm-up (replay.Options.Warmup), on no metrics
// registry (the harness's replay metrics are the scored replay's). It
// returns when every warm-up request has ended, so that time zero finds
// none in flight; an interruption ends the run there.
func (c *conductor) warmup(ctx context.Context, corpus *capture.Corpus, opts replay.Options) error {
	ropts := []replay.Option{replay.WithRecorder(c.rec), replay.WithClock(c.clock)}
	if c.live != nil {
		ropts = append(ropts, replay.WithProgressFunc(c.live.setWarmup))
	}
	wp, err := replay.NewFrom(corpus, opts, ropts...)
	if err != nil {
		return err
	}
	rate := fmt.Sprintf("%g/s", opts.Rate)
	if opts.Timing == replay.TimingOriginal {
		rate = "the capture's spacing"
	}
	c.journal.Record(&journal.Phase{Name: "warmup", Detail: fmt.Sprintf("%s at %s before time zero, not scored", opts.Duration, rate)})
	c.log.Info("warm-up", "duration", opts.Duration, "rate", rate)
	sum, err := wp.Run(ctx)
	if err != nil {
		return err
	}
	c.log.Info("warm-up done", "sent", sum.Sent, "ok", sum.ByOutcome[journal.OutcomeOK])
	return nil
}

// finish stops everything, closes the journal with run.end, writes the
// reports and turns the outcome into the run's error.
func (c *conductor) finish(res *Result, runErr error) error {
	interrupted := runErr != nil && (errors.Is(runErr, context.Canceled) || errors.Is(runErr, rehearse.ErrInterrupted))
	c.stop()
	c.unwatch()
	end := &journal.RunEnd{Reason: journal.EndCompleted}
	switch {
	case interrupted:
		end.Reason, end.Partial, end.Error = journal.EndInterrupted, true, "interrupted by signal"
	case runErr != nil:
		end.Reason, end.Partial, end.Error = journal.EndFailed, true, runErr.Error()
	}
	c.journal.Record(&journal.Log{Level: "info", Source: "rehearsal", Msg: resourceUsage()})
	c.journal.Record(end)
	if err := c.journal.Close(); err != nil {
		return errors.Join(runErr, fmt.Errorf("%w: %w", rehearse.ErrEnvironment, err))
	}

	a, results, rerr := reports.RenderDir(c.dir)
	if rerr == nil && c.opt.JUnitPath != "" {
		// Created with its parent directories, with the mode of the run
		// directory's own files.
		rerr = atomicfile.Copy(filepath.Join(c.dir, "junit.xml"), c.opt.JUnitPath, 0o644)
	}
	if rerr == nil {
		// Last: the run counts as complete only once every report is
		// there.
		rerr = c.claim.Complete()
	}
	if rerr != nil {
		// One class word: "environment failure: writing reports:
		// environment failure: …" would say it twice.
		rerr = fmt.Errorf("%w: writing reports: %s", rehearse.ErrEnvironment,
			strings.TrimPrefix(rerr.Error(), rehearse.ErrEnvironment.Error()+": "))
		a = c.reportsFailed(a, rerr)
	}
	res.Analysis, res.Expectations, res.Complete = a, results, rerr == nil
	switch {
	case interrupted:
		return errors.Join(fmt.Errorf("%w: partial run in %s", rehearse.ErrInterrupted, c.dir), rerr)
	case runErr != nil:
		return errors.Join(runErr, rerr)
	case rerr != nil:
		// The harness wrote this journal itself: a report that cannot be
		// made from it, or written, is a harness failure, whatever the
		// reports call it.
		return rerr
	case a.HarnessFailure() != "":
		// Read from the journal: the harness stalled, or the gateway
		// under test stopped answering. The expectations judged
		// nothing; exit 3, as for any harness or environment failure.
		return fmt.Errorf("%w: %s", rehearse.ErrEnvironment, a.HarnessFailure())
	}
	return expect.Failed(results)
}

// reportsFailed makes the analysis say that the harness failed while
// writing the reports (a full disk, a read-only --junit path): the
// expectations judged nothing that anyone will read in full. It writes
// that JUnit — errors="1", the expectations skipped — over the run's
// junit.xml and the --junit copy first, then every report with it, as far
// as the disk allows; a junit.xml that cannot be replaced is removed, so
// that no CI reads a verdict of a run whose report is missing. The run is
// not marked complete.
func (c *conductor) reportsFailed(a *analysis.Analysis, cause error) *analysis.Analysis {
	c.log.Error("writing the reports failed: the run is not complete", "dir", c.dir, "err", cause)
	if a == nil {
		a = &analysis.Analysis{}
		a.Run.Scenario = c.sc.Name
	}
	if a.Run.EndReason == journal.EndFailed && a.Run.EndError != "" {
		// The run had failed already: both causes, the first first.
		a.Run.EndError += "; then " + strings.TrimPrefix(cause.Error(), rehearse.ErrEnvironment.Error()+": ")
	} else {
		a.Run.EndReason, a.Run.EndError = journal.EndFailed, cause.Error()
	}
	junit, err := render.JUnit(a)
	for _, path := range []string{filepath.Join(c.dir, render.JUnitFile), c.opt.JUnitPath} {
		if path == "" {
			continue
		}
		if err != nil || atomicfile.Write(path, junit, 0o644) != nil {
			_ = os.Remove(path)
		}
	}
	if a.Timeline != nil {
		_ = render.WriteReports(c.dir, a)
	} else if data, err := render.RunJSON(a); err == nil {
		_ = atomicfile.Write(filepath.Join(c.dir, render.RunFile), data, 0o644)
	}
	return a
}

// stop undoes start in reverse order, each step bounded in time.
func (c *conductor) stop() {
	if c.obsStop != nil {
		c.obsStop()
		c.obsWG.Wait()
		// One last scrape, so that a state change in the last interval
		// (a breaker closing just before the end) is not lost.
		for _, s := range c.scrapers {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			if sample, err := s.ScrapeOnce(ctx); sample != nil {
				c.journal.Record(sample)
			} else if err != nil {
				c.log.Debug("final scrape", "err", err)
			}
			cancel()
		}
	}
	if c.journal != nil && c.inject != nil {
		// Whatever was still in flight when the replay stopped is done
		// now or abandoned; give the gateway's last calls their events.
		c.journal.Record(&journal.Phase{Name: "stop"})
	}
	for _, ln := range c.gwListeners {
		ln.Close()
	}
	if c.front != nil {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultStopTimeout)
		_ = c.front.Shutdown(ctx)
		cancel()
	}
	for _, g := range c.gateways {
		ctx, cancel := context.WithTimeout(context.Background(), DefaultStopTimeout)
		if err := g.Shutdown(ctx); err != nil {
			_ = g.Close()
		}
		cancel()
	}
	if c.inject != nil {
		if err := c.inject.Close(); err != nil {
			c.log.Warn("stopping upstreams", "err", err)
		}
	}
	c.redis.Stop()
}

func runID(start time.Time) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return start.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
