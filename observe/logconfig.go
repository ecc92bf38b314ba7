package observe

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/journal"
)

// Defaults of a LogConfig, in one place.
const (
	// DefaultLogPoll is how often the log file is checked for new lines,
	// truncation and rotation. A state change is in the journal stamped
	// with its own line's time, so the poll only delays when it is
	// written, not what it says; 250 ms keeps a 2-core machine idle.
	DefaultLogPoll = 250 * time.Millisecond
	// DefaultLogFormat is the line format: JSON lines, as OpenClaw writes.
	DefaultLogFormat = LogFormatJSON
	// DefaultLogTimeField is the JSON member holding a line's time.
	DefaultLogTimeField = "time"
	// DefaultLogMessageField is the JSON member the patterns match.
	DefaultLogMessageField = "message"
	// DefaultLogTimeFormat parses RFC 3339 times, with or without a
	// fraction, "Z" or a numeric offset.
	DefaultLogTimeFormat = TimeRFC3339
	// DefaultLogTimeRegexp finds a text line's time when its pattern has
	// no "time" group: a leading date and time ("T" or a space between
	// them), else the first word of the line.
	DefaultLogTimeRegexp = `^(\d{4}-\d{2}-\d{2}[T ]\S+|\S+)`
	// DefaultLogDependencyField names the dependency when a pattern says
	// nothing else.
	DefaultLogDependencyField = "dependency"
	// MaxLogLineBytes bounds one log line; a longer one is skipped to the
	// next newline, never buffered whole.
	MaxLogLineBytes = 1 << 20
)

// Log formats (LogConfig.Format).
const (
	LogFormatJSON = "json"
	LogFormatText = "text"
)

// Time formats (LogConfig.TimeFormat); anything else containing "2006" is
// a Go time layout.
const (
	TimeRFC3339 = "rfc3339"
	TimeUnix    = "unix"
	TimeUnixMs  = "unix_ms"
)

// PresetOpenClaw is the log preset for OpenClaw's JSON log.
const PresetOpenClaw = "openclaw"

// LogConfig says which log file to tail for breaker states and other
// events worth keeping: the scenario's gateway.log section, an
// alternative to a metrics scrape for gateways without an exporter.
type LogConfig struct {
	// Path is the log file. It may not exist yet when the run starts.
	Path string `yaml:"path" json:"path"`
	// Format is LogFormatJSON (one object per line) or LogFormatText;
	// empty means DefaultLogFormat.
	Format string `yaml:"format,omitempty" json:"format,omitempty"`
	// Preset names built-in patterns (PresetOpenClaw); empty means
	// "custom" when Patterns is set. Patterns given with a preset are
	// tried before the preset's; the first pattern that matches a line
	// wins.
	Preset string `yaml:"preset,omitempty" json:"preset,omitempty"`
	// Patterns are the lines to recognise, one per kind of line.
	Patterns []LogPattern `yaml:"patterns,omitempty" json:"patterns,omitempty"`
	// TimeField is the JSON member with the line's time; empty means
	// DefaultLogTimeField.
	TimeField string `yaml:"time_field,omitempty" json:"time_field,omitempty"`
	// MessageField is the JSON member the patterns' match applies to;
	// empty means DefaultLogMessageField.
	MessageField string `yaml:"message_field,omitempty" json:"message_field,omitempty"`
	// TimeRegexp finds the time in a text line whose pattern has no group
	// named "time": its first group (or whole match). Empty means
	// DefaultLogTimeRegexp.
	TimeRegexp string `yaml:"time_regexp,omitempty" json:"time_regexp,omitempty"`
	// TimeFormat is TimeRFC3339, TimeUnix (seconds, a fraction allowed),
	// TimeUnixMs, or a Go layout ("2006-01-02 15:04:05.000"). Empty means
	// DefaultLogTimeFormat.
	TimeFormat string `yaml:"time_format,omitempty" json:"time_format,omitempty"`
	// TimeZone is the IANA zone of a layout without an offset; empty means
	// the harness machine's.
	TimeZone string `yaml:"time_zone,omitempty" json:"time_zone,omitempty"`
	// Poll is how often the file is checked; zero means DefaultLogPoll.
	Poll rehearse.Duration `yaml:"poll,omitempty" json:"poll,omitempty"`
	// DependencyMap maps the gateway's name for a dependency (a provider)
	// to the harness upstream, when they differ.
	DependencyMap map[string]string `yaml:"dependency_map,omitempty" json:"dependency_map,omitempty"`
}

// LogPattern recognises one kind of log line. A line matches when Match
// matches its message (JSON) or the whole line (text) and every Where
// holds. Its fields are the named groups of Match and, in JSON, the
// line's members (top level, then the objects of tslog's positional
// members "0", "1", … that OpenClaw writes its structured fields into).
type LogPattern struct {
	// Name names the event; it is recorded as the series "log_<name>".
	Name string `yaml:"name" json:"name"`
	// Match is a regular expression (RE2).
	Match string `yaml:"match" json:"match"`
	// Where requires fields to match regular expressions (whole value).
	Where map[string]string `yaml:"where,omitempty" json:"where,omitempty"`
	// State, when set, makes the line a breaker state change of the
	// dependency: closed, half_open or open.
	State string `yaml:"state,omitempty" json:"state,omitempty"`
	// Dependency is the field naming the dependency; empty means
	// DefaultLogDependencyField. A line without it is recorded without
	// a state.
	Dependency string `yaml:"dependency,omitempty" json:"dependency,omitempty"`
	// Until is a field holding when an open state ends (epoch ms or RFC
	// 3339): the dependency is half_open from then on unless a later line
	// says otherwise. Only with state open.
	Until string `yaml:"until,omitempty" json:"until,omitempty"`
	// Value is a numeric field recorded as the series' value (a retry's
	// delay); empty, missing or not a number means 1.
	Value string `yaml:"value,omitempty" json:"value,omitempty"`
	// Labels are fields recorded as the series' labels besides the named
	// groups of Match (which always are): JSON members worth keeping.
	Labels []string `yaml:"labels,omitempty" json:"labels,omitempty"`
}

// Validate checks c without changing it. Errors name the field (YAML path
// below gateway.log) and wrap rehearse.ErrInvalid.
func (c LogConfig) Validate() error {
	_, err := c.compile()
	return err
}

// withDefaults returns c with its zero fields set: the one place defaults
// are applied.
func (c LogConfig) withDefaults() LogConfig {
	if c.Format == "" {
		c.Format = DefaultLogFormat
	}
	if c.Preset == "" && len(c.Patterns) > 0 {
		c.Preset = PresetCustom
	}
	if c.TimeField == "" {
		c.TimeField = DefaultLogTimeField
	}
	if c.MessageField == "" {
		c.MessageField = DefaultLogMessageField
	}
	if c.TimeRegexp == "" {
		c.TimeRegexp = DefaultLogTimeRegexp
	}
	if c.TimeFormat == "" {
		c.TimeFormat = DefaultLogTimeFormat
	}
	if c.Poll == 0 {
		c.Poll = rehearse.Duration(DefaultLogPoll)
	}
	return c
}

// logRule is a compiled LogPattern.
type logRule struct {
	LogPattern
	match *regexp.Regexp
	where map[string]*regexp.Regexp
	// timeGroup is the index of a group named "time", or -1.
	timeGroup int
}

// logCompiled is a validated LogConfig.
type logCompiled struct {
	cfg    LogConfig
	rules  []logRule
	timeRE *regexp.Regexp
	loc    *time.Location
}

func (c LogConfig) compile() (*logCompiled, error) {
	c = c.withDefaults()
	if c.Path == "" {
		return nil, cfgErr("path", "required: the gateway's log file")
	}
	if c.Format != LogFormatJSON && c.Format != LogFormatText {
		return nil, cfgErr("format", "unknown format %q (want %s or %s)", c.Format, LogFormatJSON, LogFormatText)
	}
	if c.Poll.D() < 10*time.Millisecond {
		return nil, cfgErr("poll", "%s is too short (at least 10ms)", c.Poll)
	}
	switch c.TimeFormat {
	case TimeRFC3339, TimeUnix, TimeUnixMs:
	default:
		if !strings.Contains(c.TimeFormat, "2006") {
			return nil, cfgErr("time_format", "unknown time format %q (want %s, %s, %s or a Go layout such as \"2006-01-02 15:04:05.000\")", c.TimeFormat, TimeRFC3339, TimeUnix, TimeUnixMs)
		}
	}
	out := &logCompiled{cfg: c, loc: time.Local}
	if c.TimeZone != "" {
		loc, err := time.LoadLocation(c.TimeZone)
		if err != nil {
			return nil, cfgErr("time_zone", "unknown zone %q: %v", c.TimeZone, err)
		}
		out.loc = loc
	}
	re, err := regexp.Compile(c.TimeRegexp)
	if err != nil {
		return nil, cfgErr("time_regexp", "invalid regular expression: %v", err)
	}
	out.timeRE = re
	var pats []LogPattern
	switch c.Preset {
	case PresetCustom:
		if len(c.Patterns) == 0 {
			return nil, cfgErr("patterns", "required by preset \"custom\"")
		}
	case PresetOpenClaw:
		if c.Format != LogFormatJSON {
			return nil, cfgErr("format", "preset %q reads OpenClaw's JSON log; format must be %s", c.Preset, LogFormatJSON)
		}
		pats = openClawPatterns()
	case "":
		return nil, cfgErr("preset", "required: a preset (%s) or patterns", PresetOpenClaw)
	default:
		return nil, cfgErr("preset", "unknown log preset %q (want %s, or patterns)", c.Preset, PresetOpenClaw)
	}
	for i, p := range c.Patterns {
		r, err := p.compile(fmt.Sprintf("patterns[%d]", i))
		if err != nil {
			return nil, err
		}
		out.rules = append(out.rules, r)
	}
	for i, p := range pats {
		r, err := p.compile(fmt.Sprintf("preset %s pattern %d", c.Preset, i))
		if err != nil {
			return nil, err // a preset that does not compile is a bug; its test catches it
		}
		out.rules = append(out.rules, r)
	}
	for k, v := range c.DependencyMap {
		if k == "" || v == "" {
			return nil, cfgErr("dependency_map", "empty name in %q: %q", k, v)
		}
	}
	return out, nil
}

var logEventNameRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

func (p LogPattern) compile(path string) (logRule, error) {
	r := logRule{LogPattern: p, timeGroup: -1}
	if !logEventNameRE.MatchString(p.Name) {
		return r, cfgErr(path+".name", "%q is not a name (lower case letters, digits and _, starting with a letter)", p.Name)
	}
	if p.Match == "" {
		return r, cfgErr(path+".match", "required: a regular expression")
	}
	re, err := regexp.Compile(p.Match)
	if err != nil {
		return r, cfgErr(path+".match", "invalid regular expression: %v", err)
	}
	r.match = re
	r.timeGroup = re.SubexpIndex("time")
	if p.State != "" && !validState(p.State) {
		return r, cfgErr(path+".state", "unknown state %q (want %s)", p.State, stateList)
	}
	if p.Until != "" && p.State != journal.StateOpen {
		return r, cfgErr(path+".until", "only with state: open (the moment an open state ends)")
	}
	if r.Dependency == "" {
		r.Dependency = DefaultLogDependencyField
	}
	for _, k := range slices.Sorted(maps.Keys(p.Where)) {
		wre, err := regexp.Compile("^(?:" + p.Where[k] + ")$")
		if err != nil {
			return r, cfgErr(path+".where."+k, "invalid regular expression: %v", err)
		}
		if r.where == nil {
			r.where = map[string]*regexp.Regexp{}
		}
		r.where[k] = wre
	}
	return r, nil
}

// openClawPatterns is the OpenClaw preset (openclaw 2026.9.x, with
// logging.level debug for the [model-fetch] lines). The messages, as its
// source writes them:
//
//   - `auth profile failure state updated` (warn), fields provider,
//     reason, windowType (cooldown | disabled), cooldownUntil and
//     disabledUntil (epoch ms), errorCount: a profile's cooldown starts
//     or is extended. OpenClaw keeps one window per auth profile; the
//     dependency is the provider, which is what the harness's upstream
//     stands for. Open until cooldownUntil, then the next turn is the
//     probe: half_open.
//   - `[model-fetch] response provider=P api=A model=M status=S
//     elapsedMs=E …` (debug): a 2xx is a success, and a success resets
//     the profile's failure state (markAuthProfileSuccess logs nothing
//     itself), so a 2xx response closes the provider. It is logged when
//     the headers arrive, before the stream is read.
//   - `[model-fetch] start provider=P … timeoutMs=T …` and `[model-fetch]
//     error provider=P … elapsedMs=E …`: every provider call and its
//     transport failures.
//   - `transient same-model retry N/B for P/M reason=R: delayMs=D` (warn):
//     an in-turn retry and its wait.
//   - `model fallback decision` (warn), fields decision, requestedProvider,
//     candidateProvider, nextCandidateProvider, reason, status; and
//     `model fallback chain stopped` (warn), fields reason,
//     candidateProvider.
func openClawPatterns() []LogPattern {
	const kv = `provider=(?P<provider>\S+) api=(?P<api>\S+) model=(?P<model>\S+)`
	return []LogPattern{
		{Name: "cooldown", Match: `^auth profile failure state updated`, Where: map[string]string{"windowType": "cooldown"},
			State: journal.StateOpen, Dependency: "provider", Until: "cooldownUntil", Labels: []string{"reason", "errorCount", "windowReused"}},
		{Name: "disabled", Match: `^auth profile failure state updated`, Where: map[string]string{"windowType": "disabled"},
			State: journal.StateOpen, Dependency: "provider", Until: "disabledUntil", Labels: []string{"reason", "errorCount", "windowReused"}},
		{Name: "fetch_ok", Match: `^\[model-fetch\] response ` + kv + ` status=(?P<status>2\d\d) elapsedMs=(?P<elapsed_ms>\d+)`,
			State: journal.StateClosed, Dependency: "provider", Value: "elapsed_ms"},
		{Name: "fetch_response", Match: `^\[model-fetch\] response ` + kv + ` status=(?P<status>\d+) elapsedMs=(?P<elapsed_ms>\d+)`,
			Dependency: "provider", Value: "status"},
		{Name: "fetch_start", Match: `^\[model-fetch\] start ` + kv + `.* timeoutMs=(?P<timeout_ms>\d+)`,
			Dependency: "provider", Value: "timeout_ms"},
		{Name: "fetch_error", Match: `^\[model-fetch\] error ` + kv + ` elapsedMs=(?P<elapsed_ms>\d+)`,
			Dependency: "provider", Value: "elapsed_ms"},
		{Name: "retry", Match: `^transient same-model retry (?P<attempt>\d+)/(?P<budget>\d+) for (?P<provider>[^/\s]+)/(?P<model>\S+) reason=(?P<reason>\S+): delayMs=(?P<delay_ms>\d+)`,
			Dependency: "provider", Value: "delay_ms"},
		{Name: "fallback", Match: `^model fallback decision`, Dependency: "candidateProvider",
			Labels: []string{"decision", "requestedProvider", "nextCandidateProvider", "reason", "status"}},
		{Name: "fallback_stopped", Match: `^model fallback chain stopped`, Dependency: "candidateProvider",
			Labels: []string{"reason", "errorName"}},
	}
}
