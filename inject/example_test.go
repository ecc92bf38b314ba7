package inject_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/journal"
)

// A fake "search" upstream returning 429 with Retry-After: 120 to every
// request, as the gateway under test would see it.
func ExampleServer() {
	mem := journal.NewMemory(nil)
	s, err := inject.New(
		[]inject.UpstreamConfig{{Name: "search"}},
		[]inject.FaultSpec{{Name: "quota", Type: "retry_after", Upstream: "search", Params: &inject.RetryAfterParams{After: 120e9}}},
		inject.WithRecorder(mem), inject.WithSeed(42), inject.WithLogger(slog.New(slog.DiscardHandler)),
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := s.Start(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	resp, err := http.Get(s.URL("search") + "/tools/search")
	if err != nil {
		fmt.Println(err)
		return
	}
	resp.Body.Close()
	s.Close()
	fmt.Println(resp.StatusCode, resp.Header.Get("Retry-After"))
	for _, p := range mem.OfKind(journal.KindUpstreamRequest) {
		ev := p.(*journal.UpstreamRequest)
		fmt.Println(ev.Upstream, ev.Path, ev.Fault, ev.Status, ev.RetryAfter, ev.Outcome)
	}
	// Output:
	// 429 120
	// search /tools/search quota 429 2m0s completed
}

// Decide predicts a fault's per-request decisions: here which of the
// requests stamped X-Rehearse-Seq 1 to 8 the fault "flaky" (probability
// 0.5) applies to on their first arrival, under seed 42. The same seed
// always gives the same answer.
func ExampleDecide() {
	for seq := 1; seq <= 8; seq++ {
		fmt.Print(inject.Decide(42, "flaky", fmt.Sprintf("seq:%d:0", seq), 0.5), " ")
	}
	fmt.Println()
	// Output: true false false false true false false true
}
