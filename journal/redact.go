package journal

import (
	"bytes"
	"encoding/json"

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
		if r := redact.Text(e.Error); r != e.Error {
			c := *e
			c.Error = r
			return &c
		}
	case *UpstreamRequest:
		path := redact.Query(e.Path)
		if path != e.Path {
			c := *e
			c.Path = path
			return &c
		}
	case *RunStart:
		target := redact.URL(e.Target)
		cfg := redactRaw(e.Config)
		if target != e.Target || !bytes.Equal(cfg, e.Config) {
			c := *e
			c.Target, c.Config = target, cfg
			return &c
		}
	case *RunEnd:
		if r := redact.Text(e.Error); r != e.Error {
			c := *e
			c.Error = r
			return &c
		}
	case *Phase:
		if r := redact.Text(e.Detail); r != e.Detail {
			c := *e
			c.Detail = r
			return &c
		}
	case *FaultStart:
		if r := redactRaw(e.Params); !bytes.Equal(r, e.Params) {
			c := *e
			c.Params = r
			return &c
		}
	case *MetricsSample:
		src, msg := redact.URL(e.Source), redact.Text(e.Error)
		if src != e.Source || msg != e.Error {
			c := *e
			c.Source, c.Error = src, msg
			return &c
		}
	case *HealthSample:
		u, msg, detail := redact.URL(e.URL), redact.Text(e.Error), redact.Text(e.Detail)
		if u != e.URL || msg != e.Error || detail != e.Detail {
			c := *e
			c.URL, c.Error, c.Detail = u, msg, detail
			return &c
		}
	case *BreakerTransition:
		if r := redact.Text(e.Reason); r != e.Reason {
			c := *e
			c.Reason = r
			return &c
		}
	case *Log:
		if r := redact.Text(e.Msg); r != e.Msg {
			c := *e
			c.Msg = r
			return &c
		}
	}
	return p
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
