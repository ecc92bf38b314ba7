package observe

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"testing"

	"github.com/halfopen/rehearse/journal"
)

// FuzzLogLine feeds arbitrary lines to the OpenClaw preset (JSON) and to a
// text config: no line may panic, and a recognised line has a time, a
// finite value and labels a journal can encode.
func FuzzLogLine(f *testing.F) {
	for _, name := range []string{"testdata/openclaw-429.jsonl", "testdata/openclaw-real-429.jsonl", "testdata/openclaw-startup.jsonl"} {
		fh, err := os.Open(name)
		if err != nil {
			f.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			f.Add(sc.Bytes())
		}
		fh.Close()
	}
	f.Add([]byte(`2026-12-04 22:40:05.25Z primary open`))
	f.Add([]byte(`{"time":1796424001250,"message":"x"}`))
	f.Add([]byte(`{"message":"auth profile failure state updated","1":{"windowType":"cooldown","provider":"p","cooldownUntil":1e400},"time":"2026-12-04T22:40:01Z"}`))
	jc, err := LogConfig{Path: "x", Preset: PresetOpenClaw}.compile()
	if err != nil {
		f.Fatal(err)
	}
	tc, err := textCfg("x").compile()
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		for _, c := range []*logCompiled{jc, tc} {
			m, ok, err := c.parseLine(line)
			if !ok {
				continue
			}
			if err != nil {
				t.Fatalf("ok with error %v", err)
			}
			if m.t.IsZero() || math.IsNaN(m.value) || math.IsInf(m.value, 0) {
				t.Fatalf("match %+v: want a time and a finite value", m)
			}
			s := journal.MetricsSample{Series: []journal.Series{{Name: "log_" + m.rule.Name, Labels: m.labels, Value: m.value}}}
			if _, err := json.Marshal(&s); err != nil {
				t.Fatalf("sample does not encode: %v", err)
			}
		}
	})
}
