package scenarios

import (
	"testing"
)

// TestCheckListenersNeedsAllowRemote: an upstream or the built-in gateway
// listening beyond loopback is refused at its place in the file unless the
// command line allowed it (run bound 0.0.0.0 as the file said, where
// inject serve asked for --allow-remote).
func TestCheckListenersNeedsAllowRemote(t *testing.T) {
	s := parseT(t, `version: 1
gateway:
  builtin:
    config: {listen: ":8080"}
upstreams:
  - name: search
    listen: 0.0.0.0:9001
  - name: weather
    listen: 127.0.0.1:9002
  - name: vectors
`)
	want := "test.yaml:4:22: gateway.builtin.config.listen: :8080 is not a loopback address: other machines could reach it, and the harness's listeners have no authentication; give --allow-remote to listen there anyway\n" +
		"test.yaml:7:13: upstreams[0].listen: 0.0.0.0:9001 is not a loopback address: other machines could reach it, and the harness's listeners have no authentication; give --allow-remote to listen there anyway"
	if err := s.CheckListeners(); err == nil || err.Error() != want {
		t.Fatalf("error:\n got %v\nwant %s", err, want)
	}
	s.AllowRemote = true
	if err := s.CheckListeners(); err != nil {
		t.Fatalf("with AllowRemote: %v", err)
	}
	if err := parseT(t, "version: 1\n").CheckListeners(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
}
