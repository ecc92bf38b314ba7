package reports

import (
	"bytes"
	"encoding/xml"
	"io"
	"testing"

	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/reports/analysis"
	"github.com/halfopen/rehearse/reports/render"
)

// TestControlCharactersMadeVisible: a fault name with an ESC (from an
// old journal; validation refuses one now) made timeline.svg malformed XML
// and put raw escape sequences into report.md and report.html. Every
// format shows it as ␛ instead.
func TestControlCharactersMadeVisible(t *testing.T) {
	s := base()
	s.faults[0].name = "evil\x1b[31mred\x07\x00"
	evs := s.build()
	evs[0].Payload.(*journal.RunStart).Scenario = "drill\x1b]0;pwned\x07"
	a, err := analysis.AnalyzeEvents(evs)
	if err != nil {
		t.Fatal(err)
	}
	svg := render.TimelineSVG(a, render.SVGOptions{})
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		if _, err := dec.Token(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("timeline.svg is not well-formed XML: %v", err)
		}
	}
	md, err := render.Markdown(a)
	if err != nil {
		t.Fatal(err)
	}
	html, err := render.HTML(a)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"timeline.svg": svg, "report.md": md, "report.html": html} {
		for i, c := range b {
			if c < 0x20 && c != '\t' && c != '\n' && c != '\r' || c == 0x7f {
				t.Errorf("%s holds control byte %#x at %d: %q", name, c, i, b[max(0, i-20):min(len(b), i+20)])
				break
			}
		}
		// ("[" is escaped in Markdown.)
		if !bytes.Contains(b, []byte("evil␛")) || !bytes.Contains(b, []byte("31mred␇␀")) {
			t.Errorf("%s does not show the fault's name with its controls visible", name)
		}
	}
}
