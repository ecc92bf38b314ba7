package gateway_test

import (
	"fmt"
	"time"

	"github.com/halfopen/rehearse/gateway"
)

// Five transport failures in a row open a breaker with the reference
// parameters; it then refuses calls for the 5 s cooldown.
func ExampleBreaker() {
	b := gateway.NewBreaker(gateway.BreakerConfig{})
	defer b.Close()
	for range 5 {
		t, _ := b.Allow()
		t.Done(gateway.Result{Class: gateway.ClassReset})
	}
	_, rej := b.Allow()
	fmt.Println(b.State(), rej.Reason, rej.RetryAfter.Round(time.Second))
	// Output: open open 5s
}
