package rehearsal

import (
	"context"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/testutil"
)

// harnessJUnit is the part of junit.xml a CI reads.
type harnessJUnit struct {
	Tests    int `xml:"tests,attr"`
	Failures int `xml:"failures,attr"`
	Errors   int `xml:"errors,attr"`
	Suites   []struct {
		Failures int `xml:"failures,attr"`
		Errors   int `xml:"errors,attr"`
		Skipped  int `xml:"skipped,attr"`
		Cases    []struct {
			Name    string    `xml:"name,attr"`
			Failure *struct{} `xml:"failure"`
			Error   *struct {
				Message string `xml:"message,attr"`
				Type    string `xml:"type,attr"`
			} `xml:"error"`
			Skipped *struct{} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

// checkHarnessFailure asserts that a run the harness could not carry out
// reads as one harness error everywhere, never as expectation failures.
func checkHarnessFailure(t *testing.T, dir string, expectations int, cause string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	var doc harnessJUnit
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Errors != 1 || doc.Failures != 0 || len(doc.Suites) != 1 || doc.Suites[0].Errors != 1 || doc.Suites[0].Failures != 0 {
		t.Fatalf("junit.xml: want errors=1 failures=0:\n%s", b)
	}
	s := doc.Suites[0]
	errs, skipped := 0, 0
	for _, c := range s.Cases {
		if c.Failure != nil {
			t.Errorf("junit case %s is a failure", c.Name)
		}
		if c.Error != nil {
			errs++
			if c.Error.Type != "harness" || !strings.Contains(c.Error.Message, cause) {
				t.Errorf("junit error %+v, want the cause %q", c.Error, cause)
			}
		}
		if c.Skipped != nil {
			skipped++
		}
	}
	if errs != 1 || skipped != expectations || s.Skipped != expectations {
		t.Errorf("junit: %d errors, %d skipped (attr %d), want 1 and %d:\n%s", errs, skipped, s.Skipped, expectations, b)
	}
	for _, f := range []string{"report.md", "report.html"} {
		r, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(r)
		i := strings.Index(text, "Harness failure: ")
		if i < 0 || !strings.Contains(text[i:], cause) {
			t.Errorf("%s does not lead with the harness failure and its cause %q", f, cause)
		}
		if strings.Contains(text, "expectations failed") || strings.Contains(text, "FAIL") {
			t.Errorf("%s shows expectation failures for a harness failure", f)
		}
		if k := strings.Index(text[i:], " The expectations were not evaluated"); k < 2 || strings.ContainsRune(".?!", rune(text[i+k-2])) {
			t.Errorf("%s: the harness failure is not one sentence ending in one stop", f)
		}
		if j := strings.Index(text, "Expectations"); j >= 0 && j < i {
			t.Errorf("%s: the expectations come before the harness failure", f)
		}
	}
}

const harnessExpectations = `
expectations:
  upstreams: [search]
  max_probes_in_flight: 1
  client_success_min: 0.9
`

func TestHarnessFailureTakenUpstreamPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	sc := parse(t, `
name: taken
upstreams: [{name: search, listen: "`+addr+`"}]
replay: {duration: 2s}
`+harnessExpectations)
	dir := filepath.Join(t.TempDir(), "run")
	res, err := Run(context.Background(), sc, Options{OutDir: dir})
	if rehearse.ExitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3", rehearse.ExitCode(err), err)
	}
	if res == nil || res.Analysis == nil || !strings.Contains(res.Analysis.HarnessFailure(), addr) {
		t.Fatalf("result does not carry the harness failure naming %s: %+v", addr, res)
	}
	checkHarnessFailure(t, dir, 2, addr)
}

func TestHarnessFailureUnreachableGateway(t *testing.T) {
	sc := parse(t, `
name: unreachable
gateway:
  url: http://127.0.0.1:1
  ready: {timeout: 1s}
upstreams: [{name: search, listen: "`+testutil.FreeAddr(t)+`"}]
replay: {duration: 2s}
`+harnessExpectations)
	dir := filepath.Join(t.TempDir(), "run")
	_, err := Run(context.Background(), sc, Options{OutDir: dir})
	if rehearse.ExitCode(err) != 3 {
		t.Fatalf("exit %d (%v), want 3", rehearse.ExitCode(err), err)
	}
	checkHarnessFailure(t, dir, 2, "gateway unreachable at http://127.0.0.1:1")
}

// TestReportWriteFailureIsAHarnessFailure: a report that cannot be
// written (here the --junit copy, whose directory is a file) is a harness
// failure like any other — exit 3, JUnit errors="1" failures="0", every
// report leading with the cause — and the run is not complete: no
// run.complete, so it never becomes latest.
func TestReportWriteFailureIsAHarnessFailure(t *testing.T) {
	sc := parse(t, `
name: unwritable
upstreams: [{name: search}]
replay: {rate: 20, duration: 1s}
`+harnessExpectations)
	tmp := t.TempDir()
	notADir := filepath.Join(tmp, "ci")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, "run")
	res, err := Run(context.Background(), sc, Options{OutDir: dir, JUnitPath: filepath.Join(notADir, "junit.xml")})
	if rehearse.ExitCode(err) != 3 || !strings.Contains(err.Error(), "writing reports") {
		t.Fatalf("exit %d (%v), want 3 naming the reports", rehearse.ExitCode(err), err)
	}
	if strings.Count(err.Error(), rehearse.ErrEnvironment.Error()) != 1 {
		t.Errorf("the class is said more than once: %v", err)
	}
	if res == nil || res.Complete || res.Analysis == nil || !strings.Contains(res.Analysis.HarnessFailure(), "writing reports") {
		t.Fatalf("result: %+v", res)
	}
	checkHarnessFailure(t, dir, 2, "writing reports")
	if _, err := os.Stat(filepath.Join(dir, "run.complete")); err == nil {
		t.Error("a run whose reports failed is marked complete")
	}
	// The same run with a writable --junit is complete.
	ok := filepath.Join(tmp, "ok")
	res, err = Run(context.Background(), sc, Options{OutDir: ok, JUnitPath: filepath.Join(tmp, "ci2", "junit.xml")})
	if err != nil && rehearse.ExitCode(err) != 1 || res == nil || !res.Complete {
		t.Fatalf("writable --junit: %v, %+v", err, res)
	}
	if _, err := os.Stat(filepath.Join(ok, "run.complete")); err != nil {
		t.Errorf("a complete run is not marked: %v", err)
	}
}
