package scenarios

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/inject"
	rreplay "github.com/halfopen/rehearse/replay"
)

// DigestPrefix starts every scenario digest.
const DigestPrefix = "sha256:"

// Digest identifies the drill a compiled scenario rehearses, so that a
// comparison can tell whether two runs did the same thing to their
// gateways: "sha256:" and the hex SHA-256 of the schema version, the
// replay (with the capture's content in place of its path, so the same
// capture under another path on another machine is the same drill), the
// upstreams and the fault timeline, as JSON.
//
// Left out on purpose: the gateway under test (its URL, the built-in
// gateway's configuration, how it is observed), because comparing two
// gateways or two configurations under one drill is the point; the seed,
// name and description, which a comparison shows as configuration
// differences; and the expectations, which judge a run without changing
// it. Call it after defaults are applied (Load, Parse and Builtin do
// that), so that a default written out and one left implicit agree.
func (s *Scenario) Digest() (string, error) {
	rc, _, err := s.OpenCapture()
	if err != nil {
		return "", err
	}
	defer rc.Close()
	ch := sha256.New()
	if _, err := io.Copy(ch, rc); err != nil {
		return "", fmt.Errorf("%w: reading capture for the scenario digest: %w", rehearse.ErrEnvironment, err)
	}
	replay := s.Replay
	replay.Capture = DigestPrefix + hex.EncodeToString(ch.Sum(nil))
	// The fixed schedule is what every run before replay.schedule
	// existed kept: its digest is theirs. The headers the journal keeps
	// change nothing the gateways see.
	if replay.Schedule == rreplay.ScheduleFixed {
		replay.Schedule = ""
	}
	replay.KeepHeaders = nil
	drill := struct {
		Version   int                     `json:"version"`
		Replay    ReplaySpec              `json:"replay"`
		Upstreams []inject.UpstreamConfig `json:"upstreams"`
		Faults    []inject.FaultSpec      `json:"faults"`
	}{s.Version, replay, s.Upstreams, s.Faults}
	b, err := json.Marshal(drill)
	if err != nil {
		return "", fmt.Errorf("%w: encoding the scenario for its digest: %w", rehearse.ErrInvalid, err)
	}
	sum := sha256.Sum256(b)
	return DigestPrefix + hex.EncodeToString(sum[:]), nil
}
