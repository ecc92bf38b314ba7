package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
)

func dur(p *rehearse.Duration) *time.Duration { return (*time.Duration)(p) }

// bindGatewayFlags binds a flag to each field of c that has one, with the
// gateway's defaults shown, and returns their names.
func bindGatewayFlags(fs *pflag.FlagSet, c *gateway.Config) map[string]bool {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	b, r := &c.Breaker, &c.Retry
	fs.StringVar(&c.Listen, "listen", gateway.DefaultListen, "listen address (loopback by default)")
	fs.StringVar(&c.Coord, "coord", "", "fleet coordinator for half-open probe leases: redis://host:port/db")
	fs.DurationVar(dur(&c.CoordFallbackInterval), "coord-fallback-interval", gateway.DefaultCoordFallbackInterval, "per-process probe spacing while the coordinator is unreachable")
	fs.DurationVar(dur(&c.CoordTimeout), "coord-timeout", gateway.DefaultCoordTimeout, "timeout of each Redis call")
	fs.StringVar(&c.Primary, "primary", "", "primary model provider (an upstream name) for /v1/chat/completions")
	fs.StringVar(&c.Fallback, "fallback", "", "fallback model provider used while the primary's breaker is open")
	boolPtrVar(fs, &c.FallbackOnError, "fallback-on-error", true, "also use the fallback provider when the primary fails before any byte was sent")
	fs.StringVar(&c.Env, "env", gateway.DefaultEnv, "env label of the metrics")
	fs.StringVar(&c.Region, "region", gateway.DefaultRegion, "region label of the metrics (an upstream's own region wins)")
	fs.DurationVar(dur(&b.Window), "window", gateway.DefaultWindow, "breaker sliding window")
	fs.IntVar(&b.MinSamples, "min-samples", gateway.DefaultMinSamples, "outcomes in the window before the failure ratio can open")
	fs.Float64Var(&b.FailureRatio, "failure-ratio", gateway.DefaultFailureRatio, "open when the failure share of the window exceeds this")
	fs.IntVar(&b.ConsecutiveFailures, "consecutive-failures", gateway.DefaultConsecutiveFailures, "open after this many transport failures in a row")
	fs.DurationVar(dur(&b.Cooldown), "cooldown", gateway.DefaultCooldown, "first open period; doubles after each failed probe")
	fs.DurationVar(dur(&b.CooldownMax), "cooldown-max", gateway.DefaultCooldownMax, "cap of the doubling cooldown")
	fs.DurationVar(dur(&b.ProbeInterval), "probe-interval", gateway.DefaultProbeInterval, "least spacing of half-open probes")
	durationPtrVar(fs, &b.ProbeJitter, "probe-jitter", gateway.DefaultProbeJitter, "random extra probe spacing, uniform in [0, jitter] (0: none)")
	fs.IntVar(&b.SuccessesToClose, "successes-to-close", gateway.DefaultSuccessesToClose, "consecutive probe successes (from two workers) that close")
	boolPtrVar(fs, &b.DistinctWorkers, "distinct-workers", true, "require the closing probe successes to come from two workers (upstream connections)")
	fs.Float64Var(&b.ProbeDeadlineFactor, "probe-deadline-factor", gateway.DefaultProbeDeadlineFactor, "probe header deadline = observed P99 × this")
	fs.DurationVar(dur(&b.ProbeDeadlineMin), "probe-deadline-min", gateway.DefaultProbeDeadlineMin, "floor of the probe header deadline")
	fs.DurationVar(dur(&b.ProbeDeadlineMax), "probe-deadline-max", gateway.DefaultProbeDeadlineMax, "ceiling of the probe header deadline (used until 20 latencies are observed)")
	boolPtrVar(fs, &b.RetryAfterOpens, "retry-after-opens", true, "a 429 with Retry-After opens the breaker for at least that long")
	fs.DurationVar(dur(&b.RetryAfterMax), "retry-after-max", gateway.DefaultRetryAfterMax, "cap of an honoured Retry-After")
	fs.BoolVar(&b.CountStreamCuts, "count-stream-cuts", false, "count bodies cut mid-way as breaker failures")
	fs.IntVar(&r.MaxAttempts, "retry-max-attempts", gateway.DefaultRetryMaxAttempts, "attempts per idempotent call, the first included (1 = no retries)")
	fs.DurationVar(dur(&r.BaseDelay), "retry-base-delay", gateway.DefaultRetryBaseDelay, "full-jitter backoff base")
	fs.DurationVar(dur(&r.MaxDelay), "retry-max-delay", gateway.DefaultRetryMaxDelay, "full-jitter backoff cap")
	fs.StringVar(&c.Mode, "mode", gateway.ModeReference, "reference, or naive: fixed 200ms retries ×3 of every call, no deadline, no breaker (to compare)")
	fs.DurationVar(dur(&c.Deadline.Reserve), "deadline-reserve", gateway.DefaultDeadlineReserve, "kept back from the deadline to answer after the last upstream call")
	fs.StringVar(&c.Deadline.Header, "deadline-header", gateway.DefaultDeadlineHeader, "header of a budget in ms, read from the client and sent upstream (- for none)")
	durationPtrVar(fs, &c.Canary.Interval, "canary-interval", gateway.DefaultCanaryInterval, "synthetic canary interval behind /healthz (0 disables it)")
	fs.DurationVar(dur(&c.Canary.Timeout), "canary-timeout", gateway.DefaultCanaryTimeout, "timeout of one canary check")
	fs.StringVar(&c.Canary.Path, "canary-path", gateway.DefaultCanaryPath, "path the canary checks on every upstream")
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			names[f.Name] = true
		}
	})
	return names
}

// boolPtr is a flag setting an optional bool field (nil: the default).
type boolPtr struct {
	p   **bool
	def bool
}

func boolPtrVar(fs *pflag.FlagSet, p **bool, name string, def bool, usage string) {
	fs.Var(&boolPtr{p, def}, name, usage)
	fs.Lookup(name).NoOptDefVal = "true"
}

func (b *boolPtr) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.p = &v
	return nil
}

func (b *boolPtr) String() string {
	if b.p == nil || *b.p == nil {
		return strconv.FormatBool(b.def)
	}
	return strconv.FormatBool(**b.p)
}

func (b *boolPtr) Type() string { return "bool" }

// durationPtr is a flag setting an optional duration field (nil: the
// default).
type durationPtr struct {
	p   **rehearse.Duration
	def time.Duration
}

func durationPtrVar(fs *pflag.FlagSet, p **rehearse.Duration, name string, def time.Duration, usage string) {
	fs.Var(&durationPtr{p, def}, name, usage)
}

func (d *durationPtr) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	rd := rehearse.Duration(v)
	*d.p = &rd
	return nil
}

func (d *durationPtr) String() string {
	if d.p == nil || *d.p == nil {
		return d.def.String()
	}
	return (**d.p).D().String()
}

func (d *durationPtr) Type() string { return "duration" }

// gatewayCmdOptions are the command's own flags.
type gatewayCmdOptions struct {
	configPath string
	instance   string
	upstreams  []string
	// allowRemote lets --listen (or the file's listen) be beyond
	// loopback, as inject serve and run ask.
	allowRemote bool
	// cfg is what the config flags are bound to; cfgFlags names them.
	cfg      gateway.Config
	cfgFlags map[string]bool
}

// config builds the gateway configuration: the file (or the defaults),
// then the flags that were set, then --upstream entries.
func (o *gatewayCmdOptions) config(fs *pflag.FlagSet) (gateway.Config, error) {
	var file gateway.Config
	if o.configPath != "" {
		var err error
		if file, err = gateway.LoadConfig(o.configPath); err != nil {
			return file, err
		}
	}
	// The flags write into o.cfg: remember the ones given, put the file's
	// values in their place, and give those flags again over them.
	given := map[string]string{}
	fs.Visit(func(f *pflag.Flag) {
		if o.cfgFlags[f.Name] {
			given[f.Name] = f.Value.String()
		}
	})
	o.cfg = file
	for name, v := range given {
		if err := fs.Set(name, v); err != nil {
			return o.cfg, fmt.Errorf("%w: --%s: %w", rehearse.ErrInvalid, name, err)
		}
	}
	cfg := o.cfg
	if cfg.Upstreams == nil {
		cfg.Upstreams = map[string]gateway.UpstreamConfig{}
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
	return gatewayCmd(&gatewayCmdOptions{})
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
It listens on loopback unless --allow-remote is given, and binds exactly the
address asked (0.0.0.0 is every IPv4 address, not IPv6 too). Stops gracefully
on Ctrl-C.`,
		Example: `  rehearse gateway --upstream search=http://127.0.0.1:9001 --upstream weather=http://127.0.0.1:9002
  rehearse gateway --config gateway.yaml --listen 127.0.0.1:8088
  rehearse gateway --config gateway.yaml --coord redis://127.0.0.1:6379/0 --instance gw-2`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := o.config(cmd.Flags())
			if err != nil {
				return err
			}
			if !o.allowRemote {
				if err := rehearse.CheckLoopback(cfg.WithDefaults().Listen); err != nil {
					return fmt.Errorf("%w: listen: %w", rehearse.ErrInvalid, err)
				}
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
	f.BoolVar(&o.allowRemote, "allow-remote", false, "allow a --listen address beyond loopback (the gateway has no authentication)")
	o.cfgFlags = bindGatewayFlags(f, &o.cfg)
	return cmd
}
