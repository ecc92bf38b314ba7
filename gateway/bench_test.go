package gateway

import (
	"io"
	"net/http"
	"testing"
)

// BenchmarkBreaker measures one admitted call: Allow and Done (closed).
func BenchmarkBreaker(b *testing.B) {
	br := NewBreaker(BreakerConfig{})
	defer br.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			t, _ := br.Allow()
			t.Done(Result{Class: ClassOK, Latency: 1000})
		}
	})
}

// BenchmarkProxy measures a GET through the gateway to a loopback
// upstream, against the same GET sent directly (the gateway's overhead).
func BenchmarkProxy(b *testing.B) {
	up := newUpstream(b)
	up.set(ok(`{"ok":true}`))
	cfg := fastConfig(map[string]string{"search": up.URL})
	_, base := testGateway(b, cfg)
	run := func(b *testing.B, url string) {
		c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				resp, err := c.Get(url)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	b.Run("direct", func(b *testing.B) { run(b, up.URL+"/tools/search") })
	b.Run("gateway", func(b *testing.B) { run(b, base+"/tools/search") })
}
