package rehearsal

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestRetryAfterWhileTheFaultStood: the built-in gateway on loopback, a
// 429 with Retry-After 5 s on search for 2 s. Honouring it (the default),
// the gateway stays away for the 5 s: no early call at all. With
// retry_after_opens false and a 1 s cooldown it probes while the 429s
// last — violations — and once the fault has ended its probe succeeds
// and its ordinary traffic resumes inside the last announced pause:
// counted apart as after recovery, not as violations (issue 28 item 9).
func TestRetryAfterWhileTheFaultStood(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opens  string
		honour bool
	}{{"honours", "true", true}, {"ignores", "false", false}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sc := parse(t, `
name: quota-`+tc.name+`
gateway:
  builtin:
    config:
      breaker: {cooldown: 1s, consecutive_failures: 2, min_samples: 3, window: 5s, retry_after_opens: `+tc.opens+`}
replay:
  rate: 10
  duration: 8s
  filter: {path: ^/tools/search}
faults:
  - {name: quota, type: retry_after, upstream: search, at: 1s, for: 2s, params: {after: 5s}}
`)
			res, err := Run(context.Background(), sc, Options{OutDir: filepath.Join(t.TempDir(), "run")})
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			eps := res.Analysis.Upstreams["search"].Episodes
			if len(eps) != 1 || eps[0].RetryAfterHonoured == nil {
				t.Fatalf("episodes %+v", eps)
			}
			ep := eps[0]
			t.Logf("%s", ep.Statement)
			if *ep.RetryAfterHonoured != tc.honour {
				t.Errorf("honoured %v, want %v (%d violations)", *ep.RetryAfterHonoured, tc.honour, ep.RetryAfterViolations)
			}
			if tc.honour {
				if ep.RetryAfterViolations != 0 || ep.RetryAfterAfterRecovery != 0 {
					t.Errorf("honouring gateway: %d violations, %d after recovery", ep.RetryAfterViolations, ep.RetryAfterAfterRecovery)
				}
				return
			}
			if ep.RetryAfterViolations == 0 || ep.RetryAfterAfterRecovery == 0 {
				t.Errorf("%d violations while the fault stood, %d after recovery: want both", ep.RetryAfterViolations, ep.RetryAfterAfterRecovery)
			}
			if !strings.Contains(ep.Statement, "after the fault had ended") {
				t.Errorf("statement %q", ep.Statement)
			}
		})
	}
}
