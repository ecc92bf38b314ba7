package main

import (
	"fmt"
	"log/slog"
	"net"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
)

// gatewayFlag binds one flag to a field of a gateway.Config and copies
// that field between configs, so that flags set on the command line
// override a --config file and nothing else does.
type gatewayFlag struct {
	bind func(fs *pflag.FlagSet, c *gateway.Config)
	copy func(dst, src *gateway.Config)
}

func dur(p *rehearse.Duration) *time.Duration { return (*time.Duration)(p) }

var gatewayFlags = []gatewayFlag{
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Listen, "listen", c.Listen, "listen address (loopback by default)")
	}, func(d, s *gateway.Config) { d.Listen = s.Listen }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Coord, "coord", c.Coord, "fleet coordinator for half-open probe leases: redis://host:port/db")
	}, func(d, s *gateway.Config) { d.Coord = s.Coord }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.CoordFallbackInterval), "coord-fallback-interval", c.CoordFallbackInterval.D(), "per-process probe spacing while the coordinator is unreachable")
	}, func(d, s *gateway.Config) { d.CoordFallbackInterval = s.CoordFallbackInterval }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Primary, "primary", c.Primary, "primary model provider (an upstream name) for /v1/chat/completions")
	}, func(d, s *gateway.Config) { d.Primary = s.Primary }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Fallback, "fallback", c.Fallback, "fallback model provider used while the primary's breaker is open")
	}, func(d, s *gateway.Config) { d.Fallback = s.Fallback }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Env, "env", c.Env, "env label of the metrics")
	}, func(d, s *gateway.Config) { d.Env = s.Env }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Region, "region", c.Region, "region label of the metrics (an upstream's own region wins)")
	}, func(d, s *gateway.Config) { d.Region = s.Region }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.Window), "window", c.Breaker.Window.D(), "breaker sliding window")
	}, func(d, s *gateway.Config) { d.Breaker.Window = s.Breaker.Window }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.IntVar(&c.Breaker.MinSamples, "min-samples", c.Breaker.MinSamples, "outcomes in the window before the failure ratio can open")
	}, func(d, s *gateway.Config) { d.Breaker.MinSamples = s.Breaker.MinSamples }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.Float64Var(&c.Breaker.FailureRatio, "failure-ratio", c.Breaker.FailureRatio, "open when the failure share of the window exceeds this")
	}, func(d, s *gateway.Config) { d.Breaker.FailureRatio = s.Breaker.FailureRatio }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.IntVar(&c.Breaker.ConsecutiveFailures, "consecutive-failures", c.Breaker.ConsecutiveFailures, "open after this many transport failures in a row")
	}, func(d, s *gateway.Config) { d.Breaker.ConsecutiveFailures = s.Breaker.ConsecutiveFailures }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.Cooldown), "cooldown", c.Breaker.Cooldown.D(), "first open period; doubles after each failed probe")
	}, func(d, s *gateway.Config) { d.Breaker.Cooldown = s.Breaker.Cooldown }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.CooldownMax), "cooldown-max", c.Breaker.CooldownMax.D(), "cap of the doubling cooldown")
	}, func(d, s *gateway.Config) { d.Breaker.CooldownMax = s.Breaker.CooldownMax }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.ProbeInterval), "probe-interval", c.Breaker.ProbeInterval.D(), "least spacing of half-open probes")
	}, func(d, s *gateway.Config) { d.Breaker.ProbeInterval = s.Breaker.ProbeInterval }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.ProbeJitter), "probe-jitter", c.Breaker.ProbeJitter.D(), "random extra probe spacing, uniform in [0, jitter]")
	}, func(d, s *gateway.Config) { d.Breaker.ProbeJitter = s.Breaker.ProbeJitter }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.IntVar(&c.Breaker.SuccessesToClose, "successes-to-close", c.Breaker.SuccessesToClose, "consecutive probe successes (from two workers) that close")
	}, func(d, s *gateway.Config) { d.Breaker.SuccessesToClose = s.Breaker.SuccessesToClose }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.Float64Var(&c.Breaker.ProbeDeadlineFactor, "probe-deadline-factor", c.Breaker.ProbeDeadlineFactor, "probe header deadline = observed P99 × this")
	}, func(d, s *gateway.Config) { d.Breaker.ProbeDeadlineFactor = s.Breaker.ProbeDeadlineFactor }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.RetryAfterMax), "retry-after-max", c.Breaker.RetryAfterMax.D(), "cap of an honoured Retry-After")
	}, func(d, s *gateway.Config) { d.Breaker.RetryAfterMax = s.Breaker.RetryAfterMax }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.BoolVar(&c.Breaker.CountStreamCuts, "count-stream-cuts", c.Breaker.CountStreamCuts, "count bodies cut mid-way as breaker failures")
	}, func(d, s *gateway.Config) { d.Breaker.CountStreamCuts = s.Breaker.CountStreamCuts }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.IntVar(&c.Retry.MaxAttempts, "retry-max-attempts", c.Retry.MaxAttempts, "attempts per idempotent call, the first included (1 = no retries)")
	}, func(d, s *gateway.Config) { d.Retry.MaxAttempts = s.Retry.MaxAttempts }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.BoolVar(&c.Breaker.DistinctWorkers, "distinct-workers", c.Breaker.DistinctWorkers, "require the closing probe successes to come from two workers (upstream connections)")
	}, func(d, s *gateway.Config) { d.Breaker.DistinctWorkers = s.Breaker.DistinctWorkers }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.ProbeDeadlineMin), "probe-deadline-min", c.Breaker.ProbeDeadlineMin.D(), "floor of the probe header deadline")
	}, func(d, s *gateway.Config) { d.Breaker.ProbeDeadlineMin = s.Breaker.ProbeDeadlineMin }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Breaker.ProbeDeadlineMax), "probe-deadline-max", c.Breaker.ProbeDeadlineMax.D(), "ceiling of the probe header deadline (used until 20 latencies are observed)")
	}, func(d, s *gateway.Config) { d.Breaker.ProbeDeadlineMax = s.Breaker.ProbeDeadlineMax }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.BoolVar(&c.Breaker.RetryAfterOpens, "retry-after-opens", c.Breaker.RetryAfterOpens, "a 429 with Retry-After opens the breaker for at least that long")
	}, func(d, s *gateway.Config) { d.Breaker.RetryAfterOpens = s.Breaker.RetryAfterOpens }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Retry.BaseDelay), "retry-base-delay", c.Retry.BaseDelay.D(), "full-jitter backoff base")
	}, func(d, s *gateway.Config) { d.Retry.BaseDelay = s.Retry.BaseDelay }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Retry.MaxDelay), "retry-max-delay", c.Retry.MaxDelay.D(), "full-jitter backoff cap")
	}, func(d, s *gateway.Config) { d.Retry.MaxDelay = s.Retry.MaxDelay }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.BoolVar(&c.FallbackOnError, "fallback-on-error", c.FallbackOnError, "also use the fallback provider when the primary fails before any byte was sent")
	}, func(d, s *gateway.Config) { d.FallbackOnError = s.FallbackOnError }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.CoordTimeout), "coord-timeout", c.CoordTimeout.D(), "timeout of each Redis call")
	}, func(d, s *gateway.Config) { d.CoordTimeout = s.CoordTimeout }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Canary.Timeout), "canary-timeout", c.Canary.Timeout.D(), "timeout of one canary check")
	}, func(d, s *gateway.Config) { d.Canary.Timeout = s.Canary.Timeout }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.StringVar(&c.Canary.Path, "canary-path", c.Canary.Path, "path the canary checks on every upstream")
	}, func(d, s *gateway.Config) { d.Canary.Path = s.Canary.Path }},
	{func(fs *pflag.FlagSet, c *gateway.Config) {
		fs.DurationVar(dur(&c.Canary.Interval), "canary-interval", c.Canary.Interval.D(), "synthetic canary interval behind /healthz (0 disables it)")
	}, func(d, s *gateway.Config) { d.Canary.Interval = s.Canary.Interval }},
}

// gatewayCmdOptions are the command's own flags.
type gatewayCmdOptions struct {
	configPath string
	instance   string
	upstreams  []string
	cfg        gateway.Config // flag values over the defaults
}

// config builds the gateway configuration: the file (or the defaults),
// then the flags that were set, then --upstream entries.
func (o *gatewayCmdOptions) config(fs *pflag.FlagSet) (gateway.Config, error) {
	cfg := gateway.DefaultConfig()
	if o.configPath != "" {
		var err error
		if cfg, err = gateway.LoadConfig(o.configPath); err != nil {
			return cfg, err
		}
	}
	// Copy the field of each flag that was set; binding a flag to a
	// scratch set tells its name.
	for _, f := range gatewayFlags {
		one := pflag.NewFlagSet("one", pflag.ContinueOnError)
		var c gateway.Config
		f.bind(one, &c)
		changed := false
		one.VisitAll(func(fl *pflag.Flag) { changed = changed || fs.Changed(fl.Name) })
		if changed {
			f.copy(&cfg, &o.cfg)
		}
	}
	for _, spec := range o.upstreams {
		name, u, err := gateway.ParseUpstreamFlag(spec)
		if err != nil {
			return cfg, err
		}
		if name == cfg.Primary || name == cfg.Fallback {
			u.Kind = gateway.KindModel
		}
		cfg.Upstreams[name] = u
	}
	if len(cfg.Upstreams) == 0 {
		return cfg, fmt.Errorf("%w: no upstreams: give --config FILE or --upstream name=url", rehearse.ErrInvalid)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("gateway flags: %w", err)
	}
	return cfg, nil
}

func newGatewayCmd() *cobra.Command {
	return gatewayCmd(&gatewayCmdOptions{cfg: gateway.DefaultConfig()})
}

// gatewayCmd builds the command with its flags bound to o.
func gatewayCmd(o *gatewayCmdOptions) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "gateway [--config FILE] [--upstream name=url ...]",
		Short: "Run the built-in reference gateway standalone",
		Long: `Run the reference gateway: /tools/{name} and /v1/chat/completions (SSE
pass-through, fallback provider) behind one circuit breaker per dependency,
with /metrics (openclaw_breaker_*) and /healthz (synthetic canary). The
breaker follows the field's reference practice; every parameter has a flag
and a YAML key (see docs/gateway.md). Flags override the config file.
Stops gracefully on Ctrl-C.`,
		Example: `  rehearse gateway --upstream search=http://127.0.0.1:9001 --upstream weather=http://127.0.0.1:9002
  rehearse gateway --config gateway.yaml --listen 127.0.0.1:8088
  rehearse gateway --config gateway.yaml --coord redis://127.0.0.1:6379/0 --instance gw-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config(cmd.Flags())
			if err != nil {
				return err
			}
			opts := []gateway.Option{gateway.WithLogger(slog.Default())}
			if o.instance != "" {
				opts = append(opts, gateway.WithInstance(o.instance))
			}
			g, err := gateway.New(cfg, opts...)
			if err != nil {
				return err
			}
			return g.Run(cmd.Context(), func(addr net.Addr) {
				fmt.Fprintf(cmd.OutOrStdout(), "rehearse gateway listening on http://%s\n", addr)
			})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.configPath, "config", "c", "", "gateway config file (YAML; the gateway.builtin section of a scenario)")
	f.StringVar(&o.instance, "instance", "", "instance name in Via headers, logs and fleet leases (default hostname-pid)")
	f.StringArrayVar(&o.upstreams, "upstream", nil, "upstream as name=url (repeatable; adds to or replaces the config's)")
	for _, gf := range gatewayFlags {
		gf.bind(f, &o.cfg)
	}
	return cmd
}
