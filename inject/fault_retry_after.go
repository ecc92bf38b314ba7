package inject

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/halfopen/rehearse"
)

// Retry-After forms.
const (
	RetryAfterSeconds = "seconds"
	RetryAfterDate    = "date"
)

// RetryAfterParams are the params of the "retry_after" fault.
type RetryAfterParams struct {
	// Status is the status code; 0 means 429.
	Status int `yaml:"status,omitempty" json:"status,omitempty"`
	// After is the advertised wait. In the seconds form it must be whole
	// seconds and is sent as is ("Retry-After: 120"); in the date form the
	// header is the HTTP-date of the response time plus After, rounded up
	// to the next whole second (HTTP-dates have no fractions).
	After rehearse.Duration `yaml:"after,omitempty" json:"after,omitempty"`
	// Form is "seconds" (default) or "date".
	Form string `yaml:"form,omitempty" json:"form,omitempty"`
	// Date is a fixed HTTP-date to send instead of After (form date).
	Date string `yaml:"date,omitempty" json:"date,omitempty"`
	// Body is the response body; "" means a small JSON error object.
	Body string `yaml:"body,omitempty" json:"body,omitempty"`
	// Headers are set on the response (e.g. x-ratelimit-reset).
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// retryAfterFault answers with a status and an exact Retry-After.
type retryAfterFault struct {
	status  int
	after   time.Duration
	date    string
	form    string
	body    errorBodies
	headers map[string]string
	now     func() time.Time
}

func newRetryAfter(p *RetryAfterParams) (Fault, error) {
	f := &retryAfterFault{status: p.Status, after: p.After.D(), form: p.Form, headers: p.Headers, now: time.Now}
	if f.status == 0 {
		f.status = http.StatusTooManyRequests
	}
	if f.status < 200 || f.status > 599 {
		return nil, fmt.Errorf("status: want 200-599, got %d", p.Status)
	}
	if f.form == "" {
		f.form = RetryAfterSeconds
		if p.Date != "" {
			f.form = RetryAfterDate
		}
	}
	switch f.form {
	case RetryAfterSeconds:
		if p.Date != "" {
			return nil, errors.New("date: only with form date")
		}
		if f.after%time.Second != 0 {
			return nil, fmt.Errorf("after: the seconds form sends whole seconds, got %s", f.after)
		}
	case RetryAfterDate:
		if p.Date != "" {
			if p.After != 0 {
				return nil, errors.New("set after or date, not both")
			}
			if _, err := http.ParseTime(p.Date); err != nil {
				return nil, fmt.Errorf("date: want an HTTP-date such as %q, got %q", "Wed, 21 Oct 2026 07:28:00 GMT", p.Date)
			}
			f.date = p.Date
		}
	default:
		return nil, fmt.Errorf("form: unknown %q; allowed: seconds, date", p.Form)
	}
	f.body = errorBody(f.status, p.Body)
	return f, nil
}

func (f *retryAfterFault) Describe() string {
	if f.date != "" {
		return fmt.Sprintf("respond %d, Retry-After: %s", f.status, f.date)
	}
	return fmt.Sprintf("respond %d, Retry-After %s (%s)", f.status, f.after, f.form)
}

// value returns the Retry-After header value for a response sent at now.
func (f *retryAfterFault) value(now time.Time) string {
	switch {
	case f.date != "":
		return f.date
	case f.form == RetryAfterDate:
		at := now.Add(f.after)
		if t := at.Truncate(time.Second); !t.Equal(at) {
			at = t.Add(time.Second)
		}
		return at.UTC().Format(http.TimeFormat)
	default:
		return strconv.FormatInt(int64(f.after/time.Second), 10)
	}
}

func (f *retryAfterFault) ServeHTTP(x *Exchange, _ http.Handler) {
	h := map[string]string{"Retry-After": f.value(f.now())}
	for k, v := range f.headers {
		h[k] = v
	}
	writeFixed(x, f.status, h, f.body.of(x))
}

// parseRetryAfter reads a Retry-After value as a duration from now: delay
// seconds, or an HTTP-date. ok is false when the value is neither.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}
