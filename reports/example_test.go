package reports_test

import (
	"fmt"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/verdict"
)

// A journal in which the gateway stops calling "search" after two failed
// calls and resumes two seconds later, after one successful tagged probe.
const exampleJournal = `{"t":0,"kind":"run.start","run_id":"ex","scenario":"example","seed":1,"wall_start":"2026-11-30T03:00:00Z","config":{"expectations":{"opens_within":"2s","closes_within":"5s"}}}
{"t":1000000000,"kind":"fault.start","name":"storm","type":"status","upstream":"search"}
{"t":1000000000,"kind":"client.request","seq":1,"method":"GET","route":"/tools/search","upstream":"search","scheduled":1000000000,"sent":1000000000,"done":1010000000,"status":503,"outcome":"http_5xx"}
{"t":1001000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","seq":1,"in_flight":1,"status":503,"done":1005000000,"outcome":"completed"}
{"t":1500000000,"kind":"client.request","seq":2,"method":"GET","route":"/tools/search","upstream":"search","scheduled":1500000000,"sent":1500000000,"done":1510000000,"status":503,"outcome":"http_5xx"}
{"t":1501000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","seq":2,"in_flight":1,"status":503,"done":1505000000,"outcome":"completed"}
{"t":2000000000,"kind":"client.request","seq":3,"method":"GET","route":"/tools/search","upstream":"search","scheduled":2000000000,"sent":2000000000,"done":2001000000,"status":503,"outcome":"fast_fail","fast_fail":true}
{"t":2500000000,"kind":"client.request","seq":4,"method":"GET","route":"/tools/search","upstream":"search","scheduled":2500000000,"sent":2500000000,"done":2501000000,"status":503,"outcome":"fast_fail","fast_fail":true}
{"t":3000000000,"kind":"fault.end","name":"storm","upstream":"search","applied":2}
{"t":3400000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","probe_tag":"half-open","in_flight":1,"status":200,"done":3405000000,"outcome":"completed"}
{"t":3500000000,"kind":"client.request","seq":5,"method":"GET","route":"/tools/search","upstream":"search","scheduled":3500000000,"sent":3500000000,"done":3510000000,"status":200,"outcome":"ok"}
{"t":3501000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","seq":5,"in_flight":1,"status":200,"done":3505000000,"outcome":"completed"}
{"t":4000000000,"kind":"client.request","seq":6,"method":"GET","route":"/tools/search","upstream":"search","scheduled":4000000000,"sent":4000000000,"done":4010000000,"status":200,"outcome":"ok"}
{"t":4001000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","seq":6,"in_flight":1,"status":200,"done":4005000000,"outcome":"completed"}
{"t":4500000000,"kind":"client.request","seq":7,"method":"GET","route":"/tools/search","upstream":"search","scheduled":4500000000,"sent":4500000000,"done":4510000000,"status":200,"outcome":"ok"}
{"t":4501000000,"kind":"upstream.request","upstream":"search","method":"GET","path":"/s","seq":7,"in_flight":1,"status":200,"done":4505000000,"outcome":"completed"}
{"t":5000000000,"kind":"run.end","reason":"completed"}
`

func ExampleAnalyze() {
	a, err := analysis.Analyze(strings.NewReader(exampleJournal))
	if err != nil {
		fmt.Println(err)
		return
	}
	ep := a.Upstreams["search"].Episodes[0]
	fmt.Println(ep.Statement)
	fmt.Println("opened_after_s:", *ep.OpenedAfterS, "closed_after_recovery_s:", *ep.ClosedAfterRecoveryS)
	// Output:
	// Opened 505 ms after the fault started (2 failed calls before). Shape: tagged probes. Probed 1 time (tagged), first 1.9 s after opening. Closed 405 ms after the fault ended, after 1 successful probe. Traffic resumed 510 ms after the fault ended.
	// opened_after_s: 0.505 closed_after_recovery_s: 0.405
}

func ExampleEvaluate() {
	a, _ := analysis.Analyze(strings.NewReader(exampleJournal))
	for _, r := range verdict.Evaluate(a, *a.Expected) {
		fmt.Printf("%s passed=%v observed=%s want=%s\n", r.Name, r.Passed, r.Observed, r.Want)
	}
	// Output:
	// opens_within passed=true observed=505 ms want=<= 2 s
	// closes_within passed=true observed=510 ms want=<= 5 s
}
