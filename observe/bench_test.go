package observe

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func benchParse(b *testing.B, file, ctype string, preset string) {
	data, err := os.ReadFile(filepath.Join("testdata", file))
	if err != nil {
		b.Fatal(err)
	}
	c, err := ScrapeConfig{URL: "http://127.0.0.1:9/metrics", Preset: preset}.compile()
	if err != nil {
		b.Fatal(err)
	}
	h := http.Header{"Content-Type": {ctype}}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		series, err := parseExposition(bytes.NewReader(data), h, c.keep)
		if err != nil {
			b.Fatal(err)
		}
		if len(c.mapping.States(series, resolver{})) == 0 {
			b.Fatal("no states")
		}
	}
}

// BenchmarkParseHAProxyText is a real HAProxy 2.6 exposition (61 KB, ~830
// lines) reduced to the haproxy preset.
func BenchmarkParseHAProxyText(b *testing.B) {
	benchParse(b, "haproxy-2.6.txt", "text/plain; version=0.0.4", PresetHAProxy)
}

// BenchmarkParseReferenceText and BenchmarkParseReferenceOpenMetrics parse
// the same reference-gateway series in each format.
func BenchmarkParseReferenceText(b *testing.B) {
	benchParse(b, "reference-text.txt", ctText, PresetReference)
}

func BenchmarkParseReferenceOpenMetrics(b *testing.B) {
	benchParse(b, "reference-openmetrics.txt", ctOM, PresetReference)
}

// BenchmarkScrapeLoopback is one whole scrape of a real client_golang
// registry over loopback HTTP, as Run does every interval.
func BenchmarkScrapeLoopback(b *testing.B) {
	g := newRefGateway()
	s, err := NewScraper(ScrapeConfig{URL: serve(b, g) + "/metrics"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.ScrapeOnce(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLogLineOpenClaw parses the lines of a real OpenClaw run with
// the openclaw preset: the observer's cost per log line.
func BenchmarkLogLineOpenClaw(b *testing.B) {
	data, err := os.ReadFile("testdata/openclaw-real-429.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	lines := bytes.Split(bytes.TrimSpace(data), []byte("\n"))
	c, err := LogConfig{Path: "x", Preset: PresetOpenClaw}.compile()
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data) / len(lines)))
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, ok, err := c.parseLine(lines[i%len(lines)]); !ok || err != nil {
			b.Fatal("line not recognised", err)
		}
	}
}
