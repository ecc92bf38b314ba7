package replay

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// maxJSONBody bounds how much of a response body is kept for the JSON
// fast-fail check; fast-fail bodies are small error documents.
const maxJSONBody = 64 << 10

// match reports whether a complete response is a fast-fail, and the
// gateway's error code when its body gives one.
func (f *FastFailRule) match(status int, h http.Header, body []byte) (bool, string) {
	if f.Disabled {
		return false, ""
	}
	if len(f.Statuses) > 0 {
		if !slices.Contains(f.Statuses, status) {
			return false, ""
		}
	} else if status < 400 {
		return false, ""
	}
	code, jsonOK := f.jsonMatch(body)
	if f.Header == "" && f.JSONField == "" {
		return true, code
	}
	if f.Header != "" {
		name, want, hasValue := strings.Cut(f.Header, "=")
		vals := h.Values(strings.TrimSpace(name))
		if len(vals) > 0 && (!hasValue || slices.ContainsFunc(vals, func(v string) bool {
			return strings.EqualFold(strings.TrimSpace(v), strings.TrimSpace(want))
		})) {
			return true, code
		}
	}
	return jsonOK, code
}

// jsonMatch looks up the rule's JSON field in body; it returns the field's
// value as text and whether it matches JSONValue.
func (f *FastFailRule) jsonMatch(body []byte) (string, bool) {
	if f.JSONField == "" {
		return "", false
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return "", false
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return "", false
	}
	for _, k := range strings.Split(f.JSONField, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return "", false
		}
		if v, ok = m[k]; !ok {
			return "", false
		}
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	case bool:
		s = strconv.FormatBool(x)
	default:
		return "", false
	}
	return s, f.JSONValue == "" || s == f.JSONValue
}
