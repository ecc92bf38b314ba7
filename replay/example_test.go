package replay_test

import (
	"fmt"
	"net/http"

	"github.com/halfopen/rehearse/replay"
)

// A fractional rate: one request every two and a half seconds, each due
// time computed from its index so nothing drifts.
func ExampleConstantPacer() {
	p := replay.ConstantPacer{Rate: 0.4}
	for i := range uint64(4) {
		due, _ := p.Due(i)
		fmt.Println(i, due)
	}
	// Output:
	// 0 0s
	// 1 2.5s
	// 2 5s
	// 3 7.5s
}

// The default fast-fail rule follows the shared conventions; a custom one
// can recognise, say, Envoy's overload responses.
func ExampleFastFailRule() {
	fmt.Printf("%+v\n", replay.DefaultFastFail)
	custom := replay.FastFailRule{Statuses: []int{http.StatusServiceUnavailable}, Header: "X-Envoy-Overloaded=true"}
	fmt.Printf("%+v\n", custom)
	// Output:
	// {Disabled:false Statuses:[] Header:X-Breaker-State JSONField:error.code JSONValue:dependency_unavailable}
	// {Disabled:false Statuses:[503] Header:X-Envoy-Overloaded=true JSONField: JSONValue:}
}
