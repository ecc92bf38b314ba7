package analysis

// This file reads run.start: its config (the compiled scenario) decoded
// once, the expectations in it, and what the run resolved for a
// re-render (journal.Resolved), or what this build resolves for a
// journal from before that record.

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/observe"
	"github.com/halfopen/rehearse/reports/expect"
)

// scenarioRecord is the part of the compiled scenario (run.start's config)
// the report shows: the description, what was injected and how, the
// built-in gateway's settings and the report section. It is decoded
// loosely: a journal from another version still renders.
type scenarioRecord struct {
	Description string `json:"description"`
	Gateway     struct {
		URL     string `json:"url"`
		Builtin *struct {
			Instances int             `json:"instances"`
			Config    json.RawMessage `json:"config"`
		} `json:"builtin"`
		Metrics *struct {
			Preset string `json:"preset"`
			Custom *struct {
				Metric string `json:"metric"`
			} `json:"custom"`
		} `json:"metrics"`
	} `json:"gateway"`
	Faults []struct {
		Name         string          `json:"name"`
		Type         string          `json:"type"`
		Upstream     string          `json:"upstream"`
		At           json.RawMessage `json:"at"`
		For          json.RawMessage `json:"for"`
		Match        json.RawMessage `json:"match"`
		Probability  float64         `json:"probability"`
		FirstN       int             `json:"first_n"`
		EveryNth     int             `json:"every_nth"`
		HealthChecks bool            `json:"health_checks"`
		Params       json.RawMessage `json:"params"`
	} `json:"faults"`
	Report *expect.ReportSpec `json:"report"`
}

// startConfig is run.start's config, the compiled scenario, as the
// analysis reads it: decoded once, when run.start is collected, and
// loosely (a journal from another version still renders).
type startConfig struct {
	scenarioRecord
	// Expectations are decoded strictly, apart (configExpectations): an
	// unreadable section is a failed expectation, not a lost report.
	Expectations json.RawMessage `json:"expectations"`
}

// decodeStart decodes run.start's config; nil when there is none or it
// does not decode (then only the expectations are tried, in
// configExpectations).
func decodeStart(cfg json.RawMessage) *startConfig {
	if len(cfg) == 0 {
		return nil
	}
	var sc startConfig
	if json.Unmarshal(cfg, &sc) != nil {
		return nil
	}
	return &sc
}

// breakerSeries is the metric the gateway's metrics preset reads: the
// reference gateway's by default (built-in), none for a URL gateway
// without metrics.
func (r *scenarioRecord) breakerSeries() []string {
	m := r.Gateway.Metrics
	switch {
	case m == nil && r.Gateway.Builtin != nil:
		return []string{observe.PresetMetric(observe.DefaultPreset)}
	case m == nil:
		return nil
	case m.Custom != nil && m.Custom.Metric != "":
		return []string{m.Custom.Metric}
	}
	preset := m.Preset
	if preset == "" {
		preset = observe.DefaultPreset
	}
	if s := observe.PresetMetric(preset); s != "" {
		return []string{s}
	}
	return nil
}

// expectations reads the expectations section of run.start's config.
// When the config as a whole did not decode, the section alone is tried
// (configExpectations), so that a journal from another version is still
// judged.
func (c *collector) expectations() (*expect.Expectations, error) {
	if c.cfg == nil {
		return configExpectations(c.start.Config)
	}
	raw := c.cfg.Expectations
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var e expect.Expectations
	if err := json.Unmarshal(raw, &e); err != nil {
		return nil, fmt.Errorf("%w: run.start config: expectations: %w", rehearse.ErrInvalid, err)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("run.start config: expectations: %w", err)
	}
	return &e, nil
}

// configExpectations reads "expectations" from run.start's config.
func configExpectations(raw json.RawMessage) (*expect.Expectations, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var cfg struct {
		Expectations *expect.Expectations `json:"expectations"`
	}
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%w: run.start config: expectations: %w", rehearse.ErrInvalid, err)
	}
	if cfg.Expectations != nil {
		if err := cfg.Expectations.Validate(); err != nil {
			return nil, fmt.Errorf("run.start config: expectations: %w", err)
		}
	}
	return cfg.Expectations, nil
}

// builtinSettings reads the built-in gateway's configuration from the
// scenario record, defaults applied as the gateway applies them.
func builtinSettings(rec *scenarioRecord) *GatewaySettings {
	b := rec.Gateway.Builtin
	if b == nil {
		return nil
	}
	var cfg gateway.Config
	if len(b.Config) > 0 && string(b.Config) != "null" {
		if json.Unmarshal(b.Config, &cfg) != nil {
			return nil
		}
	}
	cfg = cfg.WithDefaults()
	gs := &GatewaySettings{Instances: max(b.Instances, 1)}
	v := reflect.ValueOf(cfg.Breaker)
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		key, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if key == "" || key == "-" || !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Pointer {
			if fv.IsNil() {
				gs.Breaker = append(gs.Breaker, Setting{Key: key, Value: "default"})
				continue
			}
			fv = fv.Elem()
		}
		gs.Breaker = append(gs.Breaker, Setting{Key: key, Value: fmt.Sprint(fv.Interface())})
	}
	return gs
}

// NoteResolvedAssumed is the note of a report rendered from a journal
// whose run.start does not record what the build resolved: the settings
// and series shown are this build's, which may not be what the run used.
const NoteResolvedAssumed = "run.start does not record the resolved gateway settings or metric series (a journal written before they were recorded): the built-in gateway's settings shown apply this build's defaults, and the Prometheus links read this build's preset series"

// Resolve is what a run records in run.start (journal.Resolved) from its
// compiled scenario (run.start's config): the built-in gateway's breaker
// settings with this build's defaults applied, and the breaker-state
// series its metrics preset reads. nil when the config cannot be read.
func Resolve(config json.RawMessage) *journal.Resolved {
	sc := decodeStart(config)
	if sc == nil {
		return nil
	}
	return resolve(&sc.scenarioRecord)
}

func resolve(rec *scenarioRecord) *journal.Resolved {
	return &journal.Resolved{Gateway: builtinSettings(rec), BreakerSeries: rec.breakerSeries()}
}
