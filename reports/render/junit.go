package render

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"strings"

	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/expect"
)

// JunitSuites is junit.xml's document: one suite per run, one case per
// expectation.
type JunitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property,omitempty"`
	Cases      []junitCase     `xml:"testcase"`
	SystemOut  string          `xml:"system-out,omitempty"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Error     *junitFailure `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// JUnit renders junit.xml: one test case per expectation, observed vs
// wanted in the failure message. A run the harness could not carry out
// (Analysis.HarnessFailure) is one <error> carrying the cause, with every
// expectation skipped: a CI reader sees one broken harness, not a list of
// gateway failures that never happened. An interrupted run's expectations
// are all skipped, saying when it was interrupted.
func JUnit(a *analysis.Analysis) ([]byte, error) {
	scen := a.Run.Scenario
	if scen == "" {
		scen = "unnamed"
	}
	s := junitSuite{Name: "rehearse." + scen, Time: fmt.Sprintf("%.3f", a.Run.DurationS)}
	if !a.Run.WallStart.IsZero() {
		s.Timestamp = a.Run.WallStart.UTC().Format("2006-01-02T15:04:05")
	}
	s.Properties = []junitProperty{{"run_id", a.Run.RunID}, {"partial", fmt.Sprint(a.Run.Partial)}, {"end_reason", a.Run.EndReason}}
	if p := a.Platform; p != nil {
		s.Properties = append(s.Properties, junitProperty{"os", p.OS}, junitProperty{"arch", p.Arch})
	}
	harness, interrupted := a.HarnessFailure(), a.Interrupted()
	if harness != "" {
		s.Errors++
		s.Cases = append(s.Cases, junitCase{Name: "harness", Classname: "rehearse." + scen,
			Error: &junitFailure{Type: "harness", Message: "harness failure: " + harness, Text: harness}})
	}
	for _, r := range a.Expectations {
		c := junitCase{Name: r.Name, Classname: "rehearse." + scen + ".expectations"}
		switch {
		case harness != "":
			s.Skipped++
			c.Skipped = &junitSkipped{Message: "not evaluated: harness failure"}
		case interrupted != "":
			// Cut short by Ctrl-C or a stop: nothing to hold against the
			// gateway, and exit code 130 says the run did not finish.
			s.Skipped++
			c.Skipped = &junitSkipped{Message: "not evaluated: the run was " + interrupted}
		case r.Outcome == expect.NotObservable:
			// A failure like any other (a CI must not go green for lack of
			// evidence), saying what could not be observed.
			s.Failures++
			c.Failure = &junitFailure{Type: string(expect.NotObservable),
				Message: fmt.Sprintf("%s: %s (want %s)", r.Name, r.Message, r.Want), Text: r.Message}
		case !r.Passed:
			s.Failures++
			c.Failure = &junitFailure{Type: "expectation",
				Message: fmt.Sprintf("%s: observed %s, want %s", r.Name, r.Observed, r.Want), Text: r.Message}
		default:
			c.SystemOut = fmt.Sprintf("observed %s, want %s: %s", r.Observed, r.Want, r.Message)
		}
		s.Cases = append(s.Cases, c)
	}
	s.Tests = len(s.Cases)
	s.SystemOut = strings.Join(a.Notes, "\n")
	doc := JunitSuites{Name: "rehearse", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Suites: []junitSuite{s}}
	var b bytes.Buffer
	b.WriteString(xml.Header)
	enc := xml.NewEncoder(&b)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, err
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}
