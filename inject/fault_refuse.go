package inject

// RefuseParams are the params of the "refuse" fault; it has none.
type RefuseParams struct{}

// refuseFault closes the upstream's listener, and every open connection to
// it, for the window, and reopens the listener on the same address after:
// connection attempts in between get ECONNREFUSED from the kernel, like a
// crashed process. Per-request targeting does not apply to it.
type refuseFault struct{}

func newRefuse(*RefuseParams) (Fault, error) { return refuseFault{}, nil }

func (refuseFault) Describe() string { return "listener closed: connections refused" }

func (refuseFault) Begin(l ListenerControl) error { return l.Pause() }

func (refuseFault) End(l ListenerControl) error { return l.Resume() }
