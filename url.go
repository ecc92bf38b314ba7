package rehearse

import (
	"errors"
	"fmt"
	"net/url"

	"github.com/halfopen/rehearse/internal/redact"
)

// ParseHTTPURL parses raw as an absolute http:// or https:// URL with a
// host: the one rule for every URL the harness calls or links (the
// gateway, upstreams, metrics, health, Prometheus, webhooks, dashboards).
// The error says what is wrong and names the URL with its credentials
// redacted, as everything the harness writes does; the caller adds where
// the URL came from.
func ParseHTTPURL(raw string) (*url.URL, error) {
	shown := redact.URL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error repeats the URL unredacted: keep only its cause.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("invalid URL %q: %v", shown, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("want an absolute http:// or https:// URL, got %q", shown)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("URL %q has no host", shown)
	}
	return u, nil
}
