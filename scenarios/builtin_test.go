package scenarios

import (
	"testing"
)

func TestEveryDrillValidates(t *testing.T) {
	drills := Drills()
	if len(drills) < 9 {
		t.Fatalf("only %d built-in drills", len(drills))
	}
	for _, d := range drills {
		t.Run(d.Name, func(t *testing.T) {
			s, err := Builtin(d.Name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != d.Name {
				t.Errorf("drill %s is named %q inside", d.Name, s.Name)
			}
			if d.Description == "" {
				t.Error("no description")
			}
			if s.Gateway.Builtin == nil {
				t.Error("built-in drills run on the built-in gateway")
			}
		})
	}
}

func TestDefaultDrillIsTheWeeklyDrill(t *testing.T) {
	s, err := Builtin(DefaultDrill)
	if err != nil {
		t.Fatal(err)
	}
	if s.Replay.Rate != 10 || s.Replay.Duration.String() != "5m0s" {
		t.Errorf("weekly drill: rate %g for %s, want 10/s for 5m", s.Replay.Rate, s.Replay.Duration)
	}
	types := map[string]bool{}
	for _, f := range s.Faults {
		types[f.Type] = true
	}
	for _, want := range []string{"status", "retry_after", "stream_cut"} {
		if !types[want] {
			t.Errorf("weekly drill has no %s fault", want)
		}
	}
	if _, err := Resolve("weekly"); err != nil {
		t.Errorf("Resolve(weekly): %v", err)
	}
}
