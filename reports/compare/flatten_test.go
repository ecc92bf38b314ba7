package compare

import (
	"encoding/json"
	"testing"

	"github.com/halfopen/rehearse/internal/redact"
)

// TestFlattenRedactsByTheOneRule: the scenario settings a comparison
// lists are hidden by internal/redact's rule: credential names (headers,
// parameters, passwords) and URL user info, while a name ending in _env
// (it names a variable, not the secret) is kept.
func TestFlattenRedactsByTheOneRule(t *testing.T) {
	var v any
	cfg := `{"gateway":{"url":"http://u:hunter2@gw:8080","headers":{"X-Api-Key":"k1"},"client_secret":"s3","tls_passphrase":"p4","jwt":"e.y.z","token_env":"GW_TOKEN"},"rate":10}`
	if err := json.Unmarshal([]byte(cfg), &v); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	flatten("", v, out)
	want := map[string]string{
		"gateway.url":               "http://u:" + redact.Marker + "@gw:8080",
		"gateway.headers.X-Api-Key": redact.Marker,
		"gateway.client_secret":     redact.Marker,
		"gateway.tls_passphrase":    redact.Marker,
		"gateway.jwt":               redact.Marker,
		"gateway.token_env":         "GW_TOKEN",
		"rate":                      "10",
	}
	for k, w := range want {
		if out[k] != w {
			t.Errorf("%s = %q, want %q", k, out[k], w)
		}
	}
}
