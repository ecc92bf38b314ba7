package observe

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/halfopen/rehearse"
)

func TestTLS(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", ctText)
		w.Write([]byte("openclaw_breaker_state{dependency=\"search\"} 2\n"))
	}))
	defer srv.Close()
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	notPEM := filepath.Join(dir, "not.pem")
	os.WriteFile(notPEM, []byte("hello"), 0o600)

	for _, tt := range []struct {
		name    string
		tls     *TLSConfig
		wantErr string
	}{
		{"system roots refuse a self-signed gateway", nil, "certificate"},
		{"ca_file", &TLSConfig{CAFile: ca}, ""},
		{"ca_file and server_name", &TLSConfig{CAFile: ca, ServerName: "example.com"}, ""},
		{"wrong server_name", &TLSConfig{CAFile: ca, ServerName: "gateway.internal"}, "gateway.internal"},
		{"insecure", &TLSConfig{InsecureSkipVerify: true}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := NewScraper(ScrapeConfig{URL: srv.URL + "/metrics", TLS: tt.tls})
			if err != nil {
				t.Fatal(err)
			}
			m, err := s.ScrapeOnce(context.Background())
			if tt.wantErr == "" {
				if err != nil || len(m.States) != 1 {
					t.Fatalf("err %v, sample %+v", err, m)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, rehearse.ErrEnvironment) {
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
		})
	}

	c, err := NewCanary(HealthConfig{URL: srv.URL + "/healthz", TLS: &TLSConfig{CAFile: ca}})
	if err != nil {
		t.Fatal(err)
	}
	if h := c.Check(context.Background()); !h.Healthy {
		t.Errorf("canary over TLS: %+v", h)
	}

	for _, tt := range []struct {
		tls  *TLSConfig
		want string
	}{
		{&TLSConfig{CAFile: filepath.Join(dir, "missing.pem")}, "tls.ca_file: open "},
		{&TLSConfig{CAFile: notPEM}, "tls.ca_file: " + notPEM + " holds no PEM certificate"},
	} {
		_, err := NewScraper(ScrapeConfig{URL: srv.URL, TLS: tt.tls})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) || !errors.Is(err, rehearse.ErrInvalid) {
			t.Errorf("error %v, want %q", err, tt.want)
		}
		_, err = NewCanary(HealthConfig{URL: srv.URL, TLS: tt.tls})
		if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
			t.Errorf("canary error %v, want %q", err, tt.want)
		}
	}
}
