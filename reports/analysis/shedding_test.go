package analysis

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// shedderRun is a journal of an adaptive-throttling shedder (K = 2, a
// 2 s window of requests and accepts, the SRE book's client-side
// throttling) in front of app at 20 requests a second, quick answers, a
// 503 storm from 1 s to 3.5 s, the run dur ms long (its refused requests
// count in its window: it takes seconds to recover). It returns the
// requests turned away.
func shedderRun(seed uint64, dur float64) (*simRun, int64) {
	r := newSimRun(1000, 3500, dur)
	rnd := rand.New(rand.NewPCG(seed, 1))
	type entry struct {
		at float64
		ok bool
	}
	var win []entry
	var refused int64
	for x := 0.0; x < dur; x += 50 {
		for len(win) > 0 && x-win[0].at >= 2000 {
			win = win[1:]
		}
		acc := 0
		for _, e := range win {
			if e.ok {
				acc++
			}
		}
		p := max(0, float64(len(win)-2*acc)/float64(len(win)+1))
		if rnd.Float64() < p {
			r.block(x)
			refused++
			win = append(win, entry{x, false})
			continue
		}
		status := 200
		if x >= 1000 && x < 3500 {
			status = 503
		}
		r.pass(x, 0.5, status)
		win = append(win, entry{x, status == 200})
	}
	return r, refused
}

func (r *simRun) analyse(t *testing.T) *Episode {
	t.Helper()
	r.add(float64(r.ev[0].Payload.(*journal.RunStart).Duration)/1e6, &journal.RunEnd{Reason: journal.EndCompleted})
	sort.SliceStable(r.ev, func(i, j int) bool { return r.ev[i].T < r.ev[j].T })
	a, err := AnalyzeEvents(r.ev)
	if err != nil {
		t.Fatal(err)
	}
	return a.Upstreams["app"].Episodes[0]
}

// TestShedding: a shedder's refusals are reported as shedding — no
// cycles, probes or cooldowns — with the requests turned away, when it
// began and ended and the refused share per window, whatever its draws.
func TestShedding(t *testing.T) {
	for seed := uint64(1); seed <= 20; seed++ {
		r, refused := shedderRun(seed, 16000)
		ep := r.analyse(t)
		sd := ep.Shedding
		switch {
		case ep.Shape != ShapeShedding || sd == nil:
			t.Errorf("seed %d: shape %q (%s), want shedding", seed, ep.Shape, ep.Statement)
			continue
		case len(ep.Cycles) != 0 || ep.Probes != 0 || len(ep.CooldownsS) != 0 || ep.ProbeIntervalS.Min != nil || ep.Opened:
			t.Errorf("seed %d: a breaker story on a shedder: %d cycles, %d probes, cooldowns %v, opened %v", seed, len(ep.Cycles), ep.Probes, ep.CooldownsS, ep.Opened)
		case sd.TurnedAway != refused:
			t.Errorf("seed %d: turned away %d, the shedder refused %d", seed, sd.TurnedAway, refused)
		case sd.FirstRefusedAtS < 1 || sd.BeganAtS < sd.FirstRefusedAtS || sd.EndedAtS < sd.BeganAtS:
			t.Errorf("seed %d: first %v, began %v, ended %v: out of order or before the storm", seed, sd.FirstRefusedAtS, sd.BeganAtS, sd.EndedAtS)
		}
		var n int64
		for _, w := range sd.Windows {
			n += w.Refused
			if w.EndS-w.StartS != sd.WindowS || w.Refused > w.Requests || w.Failed > w.Forwarded {
				t.Errorf("seed %d: window %+v", seed, w)
			}
		}
		if n != sd.TurnedAway {
			t.Errorf("seed %d: the windows hold %d refusals, turned away %d", seed, n, sd.TurnedAway)
		}
	}
}

// TestSheddingNeedsTheRecovery: the same shedder in a run that ends
// while it still turns nearly everything away. With no success after
// which it turned a request away, a breaker (a trip, trials failing, a
// cooldown growing) fits what was seen: it is not called shedding on
// the evidence.
func TestSheddingNeedsTheRecovery(t *testing.T) {
	r, _ := shedderRun(3, 3500)
	if ep := r.analyse(t); ep.Shape == ShapeShedding {
		t.Errorf("shedding stated with no refusal after a success: %s", ep.ShapeEvidence)
	}
}
