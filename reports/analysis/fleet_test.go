package analysis

import (
	"compress/gzip"
	"os"
	"testing"
)

// TestFleetIsNotAShedder: three built-in gateways behind one address,
// each with its own breaker on search (make drills' fleet-redis-partition,
// recorded by it). One instance refuses while another's trial succeeds,
// the interleaving that rules a single breaker out; the run records three
// instances, so the episode stays a breaker's, with its open and probes.
func TestFleetIsNotAShedder(t *testing.T) {
	f, err := os.Open("testdata/fleet-redis-partition.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Analyze(z)
	if err != nil {
		t.Fatal(err)
	}
	u := a.Upstreams["search"]
	if u == nil || len(u.Episodes) != 1 {
		t.Fatalf("search: %+v", u)
	}
	ep := u.Episodes[0]
	if ep.Shedding != nil || ep.Shape == "shedding" || !ep.Opened || ep.Probes == 0 {
		t.Errorf("search episode read as shape %q, shedding %v, opened %v, %d probes; want a breaker's open and probes",
			ep.Shape, ep.Shedding != nil, ep.Opened, ep.Probes)
	}
}
