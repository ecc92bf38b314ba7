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
