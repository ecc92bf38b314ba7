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
	a := analyzeGz(t, "testdata/fleet-redis-partition.jsonl.gz")
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

// TestTaggedProbesAreAllCounted: a gateway that tags its probes tags
// every one, so a close with several successes in its window (three
// instances' probes, make drills' fleet-redis-partition) leaves no probe
// uncounted: probe spacing and probes in flight stay exact, not bounded
// down to the closest untagged calls (99 ms against a 300 ms spacing the
// probes themselves show).
func TestTaggedProbesAreAllCounted(t *testing.T) {
	a := analyzeGz(t, "testdata/fleet-tagged-probes.jsonl.gz")
	ep := a.Upstreams["search"].Episodes[0]
	if ep.Shape != ShapeTaggedProbe || ep.ProbeIntervalS.Min == nil {
		t.Fatalf("shape %q, probe spacing %+v", ep.Shape, ep.ProbeIntervalS)
	}
	if ep.ProbeIntervalMinBoundsS != nil || ep.MaxProbesInFlightBounds != nil {
		t.Errorf("tagged probes bounded as if uncounted: spacing min %v bounds %+v, in flight bounds %+v",
			*ep.ProbeIntervalS.Min, ep.ProbeIntervalMinBoundsS, ep.MaxProbesInFlightBounds)
	}
}

func analyzeGz(t *testing.T, path string) *Analysis {
	t.Helper()
	f, err := os.Open(path)
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
	return a
}
