package journal

import (
	"bytes"
	"encoding/json"
	"maps"

	"github.com/halfopen/rehearse/internal/redact"
)

// redactPayload applies the one redaction rule (internal/redact) to the
// fields of p that can carry a credential: URLs (a gateway URL with user
// info, a metrics URL with an api_key), request targets, error and log
// text, and the scenario's configuration (replay.rewrite.set headers, a
// credential). Every recorder applies it before keeping an event, so no
// producer can write a secret into a journal, nor into anything made from
// one (run.json, reports, junit.xml, notifications). p itself is never
// changed (a producer may still use it); a copy is returned when something
// was hidden. The two per-request kinds are checked with a few byte scans:
// they are nearly every event of a run.
func redactPayload(p Payload) Payload {
	switch e := p.(type) {
	case *ClientRequest:
		r := redact.Text(e.Error)
		h, same := redactHeaders(e.Headers)
		return changed(e, r == e.Error && same, func(c *ClientRequest) { c.Error, c.Headers = r, h })
	case *UpstreamRequest:
		path := redact.Query(e.Path)
		return changed(e, path == e.Path, func(c *UpstreamRequest) { c.Path = path })
	case *RunStart:
		target, cfg := redact.URL(e.Target), redactRaw(e.Config)
		return changed(e, target == e.Target && bytes.Equal(cfg, e.Config), func(c *RunStart) { c.Target, c.Config = target, cfg })
	case *RunEnd:
		r := redact.Text(e.Error)
		return changed(e, r == e.Error, func(c *RunEnd) { c.Error = r })
	case *Phase:
		r := redact.Text(e.Detail)
		return changed(e, r == e.Detail, func(c *Phase) { c.Detail = r })
	case *FaultStart:
		r := redactRaw(e.Params)
		return changed(e, bytes.Equal(r, e.Params), func(c *FaultStart) { c.Params = r })
	case *MetricsSample:
		src, msg := redact.URL(e.Source), redact.Text(e.Error)
		return changed(e, src == e.Source && msg == e.Error, func(c *MetricsSample) { c.Source, c.Error = src, msg })
	case *HealthSample:
		u, msg, detail := redact.URL(e.URL), redact.Text(e.Error), redact.Text(e.Detail)
		return changed(e, u == e.URL && msg == e.Error && detail == e.Detail, func(c *HealthSample) { c.URL, c.Error, c.Detail = u, msg, detail })
	case *BreakerTransition:
		r := redact.Text(e.Reason)
		return changed(e, r == e.Reason, func(c *BreakerTransition) { c.Reason = r })
	case *Log:
		r := redact.Text(e.Msg)
		return changed(e, r == e.Msg, func(c *Log) { c.Msg = r })
	}
	return p
}

// changed is the copy-on-change of redactPayload: e itself when the rule
// hid nothing (same; no copy, no allocation), else a copy of *e with the
// redacted values set on it.
func changed[T any, P interface {
	*T
	Payload
}](e P, same bool, set func(c P)) Payload {
	if same {
		return e
	}
	c := P(new(T))
	*c = *e
	set(c)
	return c
}

// redactHeaders applies the rule to kept response headers
// (replay.keep_headers): a secret header's value is hidden whatever it is
// (the replayer refuses to keep one; a Go caller might not), and every
// other value is free text (a Location with a password). same reports that
// nothing was hidden; then h itself is returned, without allocating.
func redactHeaders(h map[string]string) (map[string]string, bool) {
	var out map[string]string
	for k, v := range h {
		r := v
		if redact.IsSecretHeader(k) {
			r = redact.Marker
		} else {
			r = redact.Text(v)
		}
		if r != v && out == nil {
			out = maps.Clone(h)
		}
		if out != nil {
			out[k] = r
		}
	}
	if out == nil {
		return h, true
	}
	return out, false
}

// redactRaw redacts an embedded JSON document; nil and JSON null stay.
func redactRaw(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return raw
	}
	r := redact.JSON(raw)
	if !json.Valid(r) {
		// Not JSON to begin with: a RawMessage must stay valid for the
		// encoder, and a value that cannot be read cannot be shown.
		b, _ := json.Marshal(string(r))
		return b
	}
	return r
}
