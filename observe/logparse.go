package observe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/halfopen/rehearse/internal/redact"
)

// logMatch is one recognised log line.
type logMatch struct {
	rule *logRule
	// t is the line's own time, not when it was read.
	t time.Time
	// dep is the dependency named by the line ("" when it names none).
	dep string
	// until is when an open state ends; zero when the line does not say.
	until  time.Time
	value  float64
	labels map[string]string
}

// errLogTime is wrapped by a line that matched a pattern but whose time
// could not be read: it is counted, not recorded at the moment it was
// read, which would put a state change at the wrong time.
var errLogTime = errors.New("no readable time")

// logRecord is a decoded line: its message and a lookup of its fields.
type logRecord struct {
	msg    string
	obj    map[string]any // JSON lines
	groups map[string]string
}

// field returns a field's text: a named group of the match, else a JSON
// member at the top level, else one of the objects under tslog's
// positional members "0", "1", … (OpenClaw writes its structured fields
// there, after or before the message).
func (r *logRecord) field(name string) (string, bool) {
	if v, ok := r.groups[name]; ok {
		return v, true
	}
	if r.obj == nil {
		return "", false
	}
	if v, ok := r.obj[name]; ok {
		return scalarText(v)
	}
	for i := range 10 {
		if m, ok := r.obj[strconv.Itoa(i)].(map[string]any); ok {
			if v, ok := m[name]; ok {
				return scalarText(v)
			}
		}
	}
	return "", false
}

// scalarText is the text of a JSON scalar; objects and arrays have none.
func scalarText(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// parseLine recognises one line (without its newline). ok is false for a
// line no pattern matches; err is set for a matching line whose time
// cannot be read (errLogTime) or a JSON line that does not decode.
func (c *logCompiled) parseLine(line []byte) (m logMatch, ok bool, err error) {
	line = bytes.TrimRight(line, "\r")
	var rec logRecord
	if c.cfg.Format == LogFormatJSON {
		if len(bytes.TrimSpace(line)) == 0 {
			return m, false, nil
		}
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.UseNumber()
		if err := dec.Decode(&rec.obj); err != nil {
			return m, false, fmt.Errorf("not a JSON object: %w", err)
		}
		rec.msg, _ = scalarText(rec.obj[c.cfg.MessageField])
	} else {
		rec.msg = string(line)
	}
	for i := range c.rules {
		r := &c.rules[i]
		sub := r.match.FindStringSubmatch(rec.msg)
		if sub == nil {
			continue
		}
		rec.groups = map[string]string{}
		for j, name := range r.match.SubexpNames() {
			if name != "" && j < len(sub) {
				rec.groups[name] = sub[j]
			}
		}
		if !r.wherePasses(&rec) {
			continue
		}
		m, err = c.build(r, &rec, line, sub)
		return m, err == nil, err
	}
	return m, false, nil
}

func (r *logRule) wherePasses(rec *logRecord) bool {
	for k, re := range r.where {
		v, ok := rec.field(k)
		if !ok || !re.MatchString(v) {
			return false
		}
	}
	return true
}

// build turns a matched record into a logMatch: its time from the line,
// the dependency, the end of an open window, the value and the labels.
func (c *logCompiled) build(r *logRule, rec *logRecord, line []byte, sub []string) (logMatch, error) {
	m := logMatch{rule: r, value: 1}
	var ts string
	switch {
	case r.timeGroup >= 0 && r.timeGroup < len(sub) && sub[r.timeGroup] != "":
		ts = sub[r.timeGroup]
	case c.cfg.Format == LogFormatJSON:
		ts, _ = rec.field(c.cfg.TimeField)
	default:
		if g := c.timeRE.FindSubmatch(line); g != nil {
			ts = string(g[len(g)-1])
		}
	}
	t, err := c.parseTime(ts)
	if err != nil {
		return m, fmt.Errorf("%w: %v", errLogTime, err)
	}
	m.t = t
	m.dep, _ = rec.field(r.Dependency)
	if r.Until != "" {
		if s, ok := rec.field(r.Until); ok {
			if u, err := parseUntil(s); err == nil {
				m.until = u
			}
		}
	}
	if r.Value != "" {
		if s, ok := rec.field(r.Value); ok {
			if f, err := strconv.ParseFloat(s, 64); err == nil && !math.IsNaN(f) && !math.IsInf(f, 0) {
				m.value = f
			}
		}
	}
	m.labels = map[string]string{}
	for name, v := range rec.groups {
		if name != "time" {
			m.labels[name] = redact.Text(v)
		}
	}
	for _, name := range r.Labels {
		if v, ok := rec.field(name); ok {
			m.labels[name] = redact.Text(v)
		}
	}
	if m.dep != "" {
		m.labels["dependency"] = m.dep
	}
	if len(m.labels) == 0 {
		m.labels = nil
	}
	return m, nil
}

// parseTime reads a line's time in the configured format. RFC 3339 takes
// any fraction (or none) and "Z" or a ±hh:mm offset, and also a space in
// place of the "T"; a layout without an offset is read in TimeZone.
func (c *logCompiled) parseTime(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, errors.New("empty")
	}
	switch c.cfg.TimeFormat {
	case TimeRFC3339:
		if len(s) > 10 && s[10] == ' ' {
			s = s[:10] + "T" + s[11:]
		}
		return time.Parse(time.RFC3339Nano, s)
	case TimeUnix, TimeUnixMs:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1e16 {
			return time.Time{}, fmt.Errorf("%q is not a number", s)
		}
		if c.cfg.TimeFormat == TimeUnixMs {
			f /= 1e3
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9)), nil
	}
	return time.ParseInLocation(c.cfg.TimeFormat, s, c.loc)
}

// parseUntil reads the end of a window: epoch milliseconds (as OpenClaw
// writes cooldownUntil) or RFC 3339.
func parseUntil(s string) (time.Time, error) {
	if ms, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(ms) || math.IsInf(ms, 0) || math.Abs(ms) > 1e16 {
			return time.Time{}, errors.New("out of range")
		}
		return time.UnixMilli(int64(ms)), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}
