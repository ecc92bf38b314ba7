package scenarios

import (
	"path/filepath"
	"testing"
)

// TestLogConfigPath: a relative gateway.log path is the scenario file's
// neighbour, not the working directory's; an absolute one is kept.
func TestLogConfigPath(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{"logs/gw.log", filepath.Join(dir, "logs/gw.log")},
		{"/var/log/gw.log", "/var/log/gw.log"},
	} {
		s, err := Parse(filepath.Join(dir, "s.yaml"), []byte(`
gateway:
  url: http://127.0.0.1:18789
  log: {path: `+tc.path+`, preset: openclaw}
upstreams: [{name: primary, listen: "127.0.0.1:9101"}]
replay: {duration: 1m}
`))
		if err != nil {
			t.Fatal(err)
		}
		if got := s.LogConfig().Path; got != tc.want {
			t.Errorf("%s: path %s, want %s", tc.path, got, tc.want)
		}
	}
	if s, _ := Parse("", []byte("{}")); s.LogConfig() != nil {
		t.Error("a scenario without gateway.log has a log config")
	}
}
