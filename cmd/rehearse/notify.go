package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/notify"
	"github.com/halfopen/rehearse/rehearsal"
)

// notifyTimeout bounds the whole delivery, retries included, so that a
// dead webhook cannot hold a scheduled run open.
const notifyTimeout = 45 * time.Second

// runSummary turns how `rehearse run` ended into the webhook document.
// res may be nil (the run never started: a bad scenario, a taken port).
func runSummary(scenario string, res *rehearsal.Result, err error) notify.Summary {
	code := rehearse.ExitCode(err)
	s := notify.Summary{Scenario: scenario, ExitCode: code, EndedAt: time.Now().UTC(), Failed: []notify.Expectation{}}
	switch code {
	case rehearse.ExitOK:
		s.Verdict = notify.Passed
	case rehearse.ExitExpectations:
		s.Verdict = notify.Failed
	case rehearse.ExitInterrupted:
		s.Verdict = notify.Interrupted
	default:
		s.Verdict = notify.Error
	}
	if err != nil {
		s.Error = err.Error()
	}
	if h, herr := os.Hostname(); herr == nil {
		s.Host = h
	}
	if res == nil {
		return s
	}
	if abs, aerr := filepath.Abs(res.Dir); aerr == nil && res.Dir != "" {
		s.RunDir = abs
		if _, serr := os.Stat(filepath.Join(abs, "report.html")); serr == nil {
			s.Report = filepath.Join(abs, "report.html")
		}
	}
	if a := res.Analysis; a != nil {
		s.RunID, s.StartedAt = a.Run.RunID, a.Run.WallStart
		if a.Run.Scenario != "" {
			s.Scenario = a.Run.Scenario
		}
	}
	s.Expectations = len(res.Expectations)
	if a := res.Analysis; a != nil && !a.Judged() {
		// Interrupted, or the harness failed: nothing was judged, so
		// nothing is listed as failed (the verdict and error say why).
		return s
	}
	for _, e := range res.Failed() {
		s.Failed = append(s.Failed, notify.Expectation{Name: e.Name, Observed: e.Observed, Want: e.Want, Message: e.Message})
	}
	return s
}

// notifyRun delivers the run's summary to url. A failed delivery is logged
// (the URL redacted) and never changes the run's exit code: the run
// directory holds the truth, the notification only points to it. It sends
// even when the run was interrupted, on a context of its own.
func notifyRun(ctx context.Context, url, scenario string, res *rehearsal.Result, err error) {
	if url == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyTimeout)
	defer cancel()
	s := runSummary(scenario, res, err)
	if derr := (&notify.Sender{URL: url}).Send(ctx, s); derr != nil {
		slog.Warn("run notification not delivered", "webhook", notify.Redact(url), "err", derr)
		return
	}
	slog.Info("run notification delivered", "webhook", notify.Redact(url), "verdict", s.Verdict)
}
