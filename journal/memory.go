package journal

import (
	"sync"
	"time"
)

// Memory is a Recorder that keeps events in memory, for tests and for
// analysing a run without a file. It is safe for concurrent use.
type Memory struct {
	clock  *Clock
	mu     sync.Mutex
	events []Event
}

// NewMemory returns an empty Memory stamping events with clock; a nil clock
// starts one now.
func NewMemory(clock *Clock) *Memory {
	if clock == nil {
		clock = NewClock(time.Now())
	}
	return &Memory{clock: clock}
}

// Record implements Recorder.
func (m *Memory) Record(p Payload) { m.RecordAt(m.clock.Now(), p) }

// RecordAt implements Recorder.
func (m *Memory) RecordAt(t time.Duration, p Payload) {
	// The same rule as a written journal: what is analysed and reported
	// from memory holds no secret either.
	p = redactPayload(p)
	m.mu.Lock()
	m.events = append(m.events, Event{T: t, Payload: p})
	m.mu.Unlock()
}

// Events returns a copy of the events recorded so far, in recording order.
func (m *Memory) Events() []Event {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]Event(nil), m.events...)
}

// OfKind returns the recorded payloads of kind k, in recording order.
func (m *Memory) OfKind(k Kind) []Payload {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Payload
	for _, e := range m.events {
		if e.Kind() == k {
			out = append(out, e.Payload)
		}
	}
	return out
}
