package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/reports/num"
)

// newMetricsCmd scrapes a gateway's metrics once and shows the breaker
// states a preset reads from them: the way to check a preset or a custom
// mapping before a rehearsal.
func newMetricsCmd() *cobra.Command {
	var (
		cfg     observe.ScrapeConfig
		prom    observe.PromQueryConfig
		depMap  []string
		timeout time.Duration
		series  bool
		custom  observe.CustomPreset
		values  []string
		states  []string
	)
	cmd := &cobra.Command{
		Use:   "metrics [URL]",
		Short: "Scrape a gateway's metrics once and show the breaker states a preset reads",
		Long: `Scrape a gateway's Prometheus metrics once (or query a Prometheus server with
--prom) and print the breaker state per dependency as the chosen preset reads
it, and the upstream each dependency maps to. Use it to check a preset and a
dependency map before a rehearsal. Presets: ` + strings.Join(observe.Presets(), ", ") + `
("custom" takes its mapping by flags: --metric with --value VALUE=STATE, or
--state-label with --state NAME=STATE; see docs/metrics.md). Exit code 3 when
the scrape fails.`,
		Example: `  rehearse metrics http://127.0.0.1:8080/metrics
  rehearse metrics http://127.0.0.1:8404/metrics --preset haproxy --map be_search=search --series
  rehearse metrics http://127.0.0.1:9000/metrics --preset custom --metric mygw_breaker_state --dependency-label upstream --value 0=closed --value 1=open --value 2=half_open
  rehearse metrics --prom http://prometheus:9090 --selector 'job="gateway"'`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				cfg.URL = args[0]
			}
			if prom.URL != "" {
				cfg.PromQuery = &prom
			} else if prom.Selector != "" || prom.Query != "" {
				return fmt.Errorf("%w: --selector and --query need --prom", rehearse.ErrInvalid)
			}
			if cfg.Preset == observe.PresetCustom {
				if custom.Metric == "" {
					return fmt.Errorf("%w: --preset custom needs the mapping: --metric NAME with --value VALUE=STATE (value mode) or --state-label LABEL with --state NAME=STATE (one-hot mode); docs/metrics.md", rehearse.ErrInvalid)
				}
				var err error
				if custom.Values, err = pairs("--value", values); err != nil {
					return err
				}
				if custom.States, err = pairs("--state", states); err != nil {
					return err
				}
				cfg.Custom = &custom
			} else if custom.Metric != "" || len(values) > 0 || len(states) > 0 || custom.StateLabel != "" || len(custom.DependencyLabels) > 0 || custom.Otherwise != "" {
				return fmt.Errorf("%w: --metric, --dependency-label, --value, --state-label, --state and --otherwise give a custom mapping: use them with --preset custom", rehearse.ErrInvalid)
			}
			for _, kv := range depMap {
				dep, up, ok := strings.Cut(kv, "=")
				if !ok || dep == "" || up == "" {
					return fmt.Errorf("%w: --map %q: want DEPENDENCY=UPSTREAM", rehearse.ErrInvalid, kv)
				}
				if cfg.DependencyMap == nil {
					cfg.DependencyMap = map[string]string{}
				}
				cfg.DependencyMap[dep] = up
			}
			cfg.Interval = rehearse.Duration(timeout)
			cfg.Timeout = rehearse.Duration(timeout)
			if cfg.URL == "" && cfg.PromQuery == nil {
				return fmt.Errorf("%w: no metrics URL: give it as an argument (rehearse metrics http://127.0.0.1:8080/metrics) or query Prometheus with --prom URL", rehearse.ErrInvalid)
			}
			s, err := observe.NewScraper(cfg)
			if err != nil {
				return flagError(err, metricsFlagNames)
			}
			sample, err := s.ScrapeOnce(cmd.Context())
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %d series kept in %s\n", sample.Source, len(sample.Series), num.Sec(sample.Took.Seconds()))
			if len(sample.States) == 0 {
				fmt.Fprintf(out, "no breaker states: no usable %s series (wrong preset or URL?)\n", s.StateMetric())
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "DEPENDENCY\tUPSTREAM\tSTATE")
				for _, b := range sample.States {
					up := b.Upstream
					if up == "" {
						up = "-"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", b.Dependency, up, b.State)
				}
				tw.Flush()
			}
			if series {
				for _, s := range sample.Series {
					fmt.Fprintf(out, "%s%s %g\n", s.Name, formatLabels(s.Labels), s.Value)
				}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&cfg.Preset, "preset", observe.DefaultPreset, "breaker-state preset: "+strings.Join(observe.Presets(), ", "))
	f.StringVar(&cfg.Format, "format", observe.FormatAuto, "exposition format to ask for: auto, text or openmetrics")
	f.StringArrayVar(&cfg.Keep, "keep", nil, "also keep series whose name matches this regular expression (repeatable)")
	f.StringArrayVar(&depMap, "map", nil, "map a gateway dependency (or part of it) to an upstream name: DEP=UPSTREAM (repeatable)")
	f.DurationVar(&timeout, "timeout", observe.DefaultMaxScrapeTimeout, "scrape timeout")
	f.BoolVar(&series, "series", false, "also print the kept series")
	f.StringVar(&custom.Metric, "metric", "", "with --preset custom: the breaker-state series name")
	f.StringArrayVar(&custom.DependencyLabels, "dependency-label", nil, "with --preset custom: a label naming the dependency (repeatable; default dependency)")
	f.StringArrayVar(&values, "value", nil, "with --preset custom, value mode: VALUE=STATE, e.g. 0=closed (repeatable)")
	f.StringVar(&custom.StateLabel, "state-label", "", "with --preset custom, one-hot mode: the label holding the state name")
	f.StringArrayVar(&states, "state", nil, "with --preset custom, one-hot mode: NAME=STATE, e.g. HALF_OPEN=half_open (repeatable)")
	f.StringVar(&custom.Otherwise, "otherwise", "", "with --preset custom: the state of a value or name not listed")
	f.StringVar(&prom.URL, "prom", "", "query this Prometheus server instead of scraping URL")
	f.StringVar(&prom.Selector, "selector", "", `with --prom: label matchers narrowing the query, e.g. job="gateway"`)
	f.StringVar(&prom.Query, "query", "", "with --prom: your own PromQL instead of the preset's selector")
	return cmd
}

// metricsFlagNames names the flag (or argument) of each config key the
// command sets, so that an error speaks of what the user typed.
var metricsFlagNames = map[string]string{
	"url":                 "URL argument",
	"preset":              "--preset",
	"format":              "--format",
	"keep":                "--keep",
	"dependency_map":      "--map",
	"timeout":             "--timeout",
	"interval":            "--timeout",
	"prom_query.url":      "--prom",
	"prom_query.selector": "--selector",
	"prom_query.query":    "--query",
	"custom.metric":       "--metric",
	"custom":              "--preset custom",
}

// flagError renames the config path of a *rehearse.ConfigError after the
// flag that set it (the longest known prefix of its path wins).
func flagError(err error, names map[string]string) error {
	ce, ok := errors.AsType[*rehearse.ConfigError](err)
	if !ok {
		return err
	}
	best := ""
	for key := range names {
		if (ce.Path == key || strings.HasPrefix(ce.Path, key+".") || strings.HasPrefix(ce.Path, key+"[")) && len(key) > len(best) {
			best = key
		}
	}
	if best == "" {
		return err
	}
	out := *ce
	out.Path = names[best]
	return &out
}

// pairs reads repeated K=V flag values into a map.
func pairs(flag string, kvs []string) (map[string]string, error) {
	if len(kvs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, kv := range kvs {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%w: %s %q: want KEY=STATE", rehearse.ErrInvalid, flag, kv)
		}
		m[k] = v
	}
	return m, nil
}

// formatLabels writes labels as the text format does, sorted by name:
// {a="1",b="2"}.
func formatLabels(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(l))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, l[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
