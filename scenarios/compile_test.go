package scenarios

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"github.com/halfopen/rehearse/gateway"
	"github.com/halfopen/rehearse/inject"
	"github.com/halfopen/rehearse/replay"
)

func loadT(t *testing.T, path string) *Scenario {
	t.Helper()
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCaptureOptions(t *testing.T) {
	s := loadT(t, filepath.Join("testdata", "valid-external-gateway.yaml"))
	opt, err := s.CaptureOptions()
	if err != nil {
		t.Fatal(err)
	}
	if !opt.SkipIncomplete || opt.KeepSecrets || len(opt.Filter.Methods) != 2 || opt.Filter.Path == nil ||
		!opt.Filter.Path.MatchString("/tools/search") || opt.Filter.Path.MatchString("/v1/chat/completions") {
		t.Fatalf("filter %+v", opt)
	}
	if len(opt.Rewrite.Set) != 1 || opt.Rewrite.Set[0].Name != "Authorization" || opt.Rewrite.Set[0].Value != "Bearer test-token" ||
		len(opt.Rewrite.Drop) != 1 {
		t.Fatalf("rewrite %+v", opt.Rewrite)
	}
	// No filter, no rewrite: the zero options of the capture reader.
	s = loadT(t, filepath.Join("testdata", "valid-minimal.yaml"))
	if opt, err := s.CaptureOptions(); err != nil || opt.Filter.Path != nil || len(opt.Rewrite.Set) != 0 {
		t.Fatalf("minimal: %+v %v", opt, err)
	}
}

func TestReplayOptions(t *testing.T) {
	s := loadT(t, filepath.Join("testdata", "valid-external-gateway.yaml"))
	target, _ := url.Parse("http://127.0.0.1:8080")
	o := s.ReplayOptions(target, "run-1")
	if o.Target != target || o.RunID != "run-1" || o.Rate != 0.5 || o.Duration != 90*time.Second ||
		o.Timing != replay.TimingRate || o.Deadline != DefaultDeadline || o.MaxInFlight != replay.DefaultMaxInFlight {
		t.Fatalf("options %+v", o)
	}
	if len(o.Routes) != 1 || o.Routes[0].Prefix != "/tools/search" || o.Routes[0].Upstream != "search" {
		t.Fatalf("routes %+v", o.Routes)
	}
	if len(o.FastFail.Statuses) != 1 || o.FastFail.Header != "X-Breaker-State" {
		t.Fatalf("fast fail %+v", o.FastFail)
	}
	// Every upstream is a fake: writes are safe to replay.
	if !o.AllowWrites {
		t.Fatal("writes refused although every upstream is a fake")
	}
	s.Upstreams[0].Mode, s.Upstreams[0].Target = inject.ModeProxy, "http://127.0.0.1:1"
	if s.ReplayOptions(target, "").AllowWrites {
		t.Fatal("writes allowed to a real upstream without allow_writes")
	}
}

func TestInjectUpstreamsAndGatewayWiring(t *testing.T) {
	s, err := Builtin("fleet-redis-partition")
	if err != nil {
		t.Fatal(err)
	}
	ups := s.InjectUpstreams("127.0.0.1:7777")
	var relay inject.UpstreamConfig
	for _, u := range ups {
		if u.Name == "redis" {
			relay = u
		}
	}
	if relay.Target != "127.0.0.1:7777" {
		t.Fatalf("the Redis relay does not lead to the harness's Redis: %+v", relay)
	}
	if s.Upstreams[len(s.Upstreams)-1].Target == "127.0.0.1:7777" {
		t.Fatal("InjectUpstreams changed the scenario")
	}
	if got := s.GatewayCoord("redis://127.0.0.1:7777/0", "127.0.0.1:8888"); got != "redis://127.0.0.1:8888/0" {
		t.Fatalf("coord through the relay: %s", got)
	}
	if s.GatewayListen() != "127.0.0.1:0" {
		t.Fatalf("a fleet listens on free ports, got %s", s.GatewayListen())
	}
	cfg := s.GatewayConfig(func(name string) string { return "http://" + name + ".test" }, "redis://c/0")
	if len(cfg.Upstreams) != 5 || cfg.Upstreams["search"].URL != "http://search.test" || cfg.Coord != "redis://c/0" {
		t.Fatalf("gateway upstreams %+v", cfg.Upstreams)
	}
	if cfg.Upstreams["llm-primary"].Kind != gateway.KindModel || cfg.Upstreams["search"].Kind == gateway.KindModel {
		t.Fatalf("model providers: %+v", cfg.Upstreams)
	}
	if _, ok := cfg.Upstreams["redis"]; ok {
		t.Fatal("a tcp relay is not an HTTP upstream of the gateway")
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}

	// Without a relay, redis: auto coordinates through the harness's Redis.
	s.Gateway.Builtin.RedisUpstream = ""
	if got := s.GatewayCoord("redis://127.0.0.1:7777/0", ""); got != "redis://127.0.0.1:7777/0" {
		t.Fatalf("coord: %s", got)
	}
	s.Gateway.Builtin.Redis = ""
	if got := s.GatewayCoord("redis://127.0.0.1:7777/0", ""); got != "" {
		t.Fatalf("no redis, coord %s", got)
	}
}

func TestObserveConfigs(t *testing.T) {
	// The built-in gateway: reference preset on the first instance,
	// /healthz on the target.
	s, err := Builtin("weekly")
	if err != nil {
		t.Fatal(err)
	}
	sc := s.ScrapeConfigs([]string{"http://127.0.0.1:1", "http://127.0.0.1:2"})
	if len(sc) != 1 || sc[0].URL != "http://127.0.0.1:1/metrics" || sc[0].Preset != "reference" {
		t.Fatalf("scrape %+v", sc)
	}
	if h := s.HealthConfig("http://127.0.0.1:9/"); h == nil || h.URL != "http://127.0.0.1:9/healthz" {
		t.Fatalf("health %+v", h)
	}
	if rc := s.ReadyCheck("http://127.0.0.1:9"); rc.URL != "http://127.0.0.1:9/healthz" || rc.Timeout != DefaultReadyTimeout {
		t.Fatalf("ready %+v", rc)
	}
	// A gateway given by URL: its own metrics and health URLs.
	s = loadT(t, filepath.Join("testdata", "valid-external-gateway.yaml"))
	sc = s.ScrapeConfigs(nil)
	if len(sc) != 1 || sc[0].URL != "http://127.0.0.1:8080/metrics" || sc[0].Preset != "haproxy" {
		t.Fatalf("scrape %+v", sc)
	}
	if h := s.HealthConfig("http://127.0.0.1:8080"); h.URL != "http://127.0.0.1:8080/healthz" {
		t.Fatalf("health %+v", h)
	}
	// Neither metrics nor health: nothing scraped, ready on the root.
	s.Gateway.Metrics, s.Gateway.Health = nil, nil
	if s.ScrapeConfigs(nil) != nil || s.HealthConfig("http://g") != nil || s.ReadyCheck("http://g").URL != "http://g/" {
		t.Fatal("observers without metrics and health")
	}
	s.Gateway.Ready.URL, s.Gateway.Ready.Require2xx = "http://g/ready", true
	if rc := s.ReadyCheck("http://g"); rc.URL != "http://g/ready" || !rc.Require2xx {
		t.Fatalf("ready %+v", rc)
	}
}

func TestRunStart(t *testing.T) {
	s := loadT(t, filepath.Join("testdata", "valid-external-gateway.yaml"))
	rs, err := s.RunStart()
	if err != nil {
		t.Fatal(err)
	}
	if rs.Scenario != "my-gateway-503" || !filepath.IsAbs(rs.ScenarioFile) || rs.Seed != DefaultSeed || rs.Rate != 0.5 ||
		rs.Duration != 90*time.Second || len(rs.Upstreams) != 1 || rs.ScenarioDigest == "" {
		t.Fatalf("run.start %+v", rs)
	}
	// The compiled scenario, with its expectations, for the reports.
	var cfg struct {
		Expectations map[string]any `json:"expectations"`
	}
	if err := json.Unmarshal(rs.Config, &cfg); err != nil || cfg.Expectations["opens_within"] != "20s" {
		t.Fatalf("config %s (%v)", rs.Config, err)
	}
	// Original timing has no fixed rate.
	s.Replay.Timing = replay.TimingOriginal
	if rs, _ := s.RunStart(); rs.Rate != 0 {
		t.Fatalf("rate %g for original timing", rs.Rate)
	}
	// A built-in drill has no file.
	b, _ := Builtin("weekly")
	if rs, _ := b.RunStart(); rs.ScenarioFile != "" || rs.Scenario != "weekly" {
		t.Fatalf("built-in run.start %+v", rs)
	}
}

// The schedule, its seed and the headers to keep reach the replayer, and
// the journal's copy of the scenario says which schedule the sends kept
// (fixed written out when the file left it out).
func TestReplayScheduleAndKeptHeaders(t *testing.T) {
	s := loadT(t, filepath.Join("testdata", "valid-schedule.yaml"))
	target, _ := url.Parse("http://127.0.0.1:8080")
	o := s.ReplayOptions(target, "run-1")
	if o.Schedule != replay.SchedulePoisson || o.Seed != 7 || len(o.KeepHeaders) != 2 || o.KeepHeaders[1] != "x-retry-count" {
		t.Fatalf("options schedule %q seed %d keep %v", o.Schedule, o.Seed, o.KeepHeaders)
	}
	for file, want := range map[string]string{"valid-schedule.yaml": "poisson", "valid-minimal.yaml": "fixed"} {
		rs, err := loadT(t, filepath.Join("testdata", file)).RunStart()
		if err != nil {
			t.Fatal(err)
		}
		var cfg struct {
			Replay struct {
				Schedule    string   `json:"schedule"`
				KeepHeaders []string `json:"keep_headers"`
			} `json:"replay"`
		}
		if err := json.Unmarshal(rs.Config, &cfg); err != nil || cfg.Replay.Schedule != want {
			t.Errorf("%s: run.start config replay %+v (%v), want schedule %s", file, cfg.Replay, err, want)
		}
	}
	// Original timing has no schedule.
	o2 := loadT(t, filepath.Join("testdata", "valid-minimal.yaml"))
	o2.Replay.Timing, o2.Replay.Schedule = replay.TimingOriginal, ""
	o2.ApplyDefaults()
	if o2.Replay.Schedule != "" {
		t.Errorf("original timing given schedule %q", o2.Replay.Schedule)
	}
}

// replay.warmup compiles to a second replay: its duration and rate, the
// replay's requests and deadline, marked warm-up; the scored replay is
// not marked; no warm-up, no second replay. A warm-up rate with timing
// original sends on the fixed grid; without one, the capture's spacing.
func TestWarmupOptions(t *testing.T) {
	s := loadT(t, filepath.Join("testdata", "valid-warmup.yaml"))
	target, _ := url.Parse("http://127.0.0.1:8080")
	w, ok := s.WarmupOptions(target, "run-1")
	if !ok || !w.Warmup || w.Duration != 20*time.Second || w.Rate != 1 || w.Once || w.Deadline != s.Replay.Deadline.D() || w.Timing != replay.TimingRate {
		t.Fatalf("warm-up options %+v (%v)", w, ok)
	}
	if o := s.ReplayOptions(target, "run-1"); o.Warmup || o.Rate != 5 || o.Duration != time.Minute {
		t.Errorf("replay options %+v", o)
	}
	s.Replay.Warmup.Rate = 0
	if w, _ := s.WarmupOptions(target, "run-1"); w.Rate != 5 {
		t.Errorf("warm-up rate %g, want replay.rate", w.Rate)
	}
	s.Replay.Timing, s.Replay.Schedule = replay.TimingOriginal, ""
	if w, _ := s.WarmupOptions(target, "run-1"); w.Timing != replay.TimingOriginal {
		t.Errorf("original timing without a warm-up rate: %q", w.Timing)
	}
	s.Replay.Warmup.Rate = 2
	if w, _ := s.WarmupOptions(target, "run-1"); w.Timing != replay.TimingRate || w.Rate != 2 || w.Schedule != replay.ScheduleFixed {
		t.Errorf("original timing with a warm-up rate: %q %g %q", w.Timing, w.Rate, w.Schedule)
	}
	if _, ok := loadT(t, filepath.Join("testdata", "valid-minimal.yaml")).WarmupOptions(target, "run-1"); ok {
		t.Error("a scenario without a warm-up has one")
	}
}
