package inject

import (
	"errors"
	"testing"

	"github.com/halfopen/rehearse"
)

// FuzzParseConfig checks that any input either decodes or fails with an
// invalid-input error, never panics, and that a decoded config either
// builds a server or fails the same way.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		"upstreams: [{name: a}]\n",
		"seed: 1\nupstreams:\n  - name: a\n    healthy: {body_bytes: 10, latency: {percentiles: {p50: 1ms, p90: 2ms, p99: 3ms}}, sse: {events: 2}}\nfaults:\n  - {type: stream_cut, upstream: a, params: {after_percent: 40, then: fin}}\n",
		"upstreams: [{name: r, mode: tcp, target: '127.0.0.1:1'}]\nfaults: [{type: bandwidth, upstream: r, params: {bytes_per_second: 10}}]\n",
		"upstreams: [{name: a}]\nfaults: [{type: retry_after, upstream: a, at: 1s, for: 2s, params: {form: date, after: 3s}}]\n",
		"upstreams: [{name: a}]\nfaults: [{type: status, upstream: a, match: {path: '^/x', header: {X: ''}}, probability: 0.3, first_n: 2}]\n",
		"upstreams: &a [{name: a}]\nfaults: *a\n",
		"upstreams: [{name: a}]\nfaults: [{type: status, upstream: a, params: [1, 2]}]\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if _, err := New(c.Upstreams, c.Faults); err != nil && !errors.Is(err, rehearse.ErrInvalid) {
			t.Fatalf("New: error %v does not wrap ErrInvalid", err)
		}
	})
}

// FuzzFaultSpecJSON checks the control API's decoder (JSON or YAML bodies)
// the same way.
func FuzzFaultSpecJSON(f *testing.F) {
	for _, seed := range []string{
		`{"type":"status","upstream":"a","params":{"code":503}}`,
		`{"type":"stream_cut","upstream":"a","at":"5s","for":"1m","params":{"after_events":3,"then":"stall"}}`,
		`{"type":"latency","upstream":"a","probability":0.5,"params":{"uniform":{"min":"1ms","max":"2ms"}}}`,
		"type: retry_after\nupstream: a\nparams: {date: 'Wed, 21 Oct 2026 07:28:00 GMT'}\n",
		`{"type":"nope"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var spec FaultSpec
		if err := spec.UnmarshalJSON(data); err != nil {
			if !errors.Is(err, rehearse.ErrInvalid) {
				t.Fatalf("error %v does not wrap ErrInvalid", err)
			}
			return
		}
		if _, err := New([]UpstreamConfig{{Name: "a"}}, []FaultSpec{spec}); err != nil && !errors.Is(err, rehearse.ErrInvalid) {
			t.Fatalf("New: error %v does not wrap ErrInvalid", err)
		}
	})
}
