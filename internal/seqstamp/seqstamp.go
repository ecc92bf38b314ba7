// Package seqstamp is the one spelling of the sequence stamp the replayer
// writes into a request's body and a fake upstream reads back: the
// request identity for gateways that build their own upstream request and
// forward no client header (AI agent runtimes, which pass the client's
// last user message through as text, often inside a larger prompt).
//
// The stamp is a short token, "[rehearse:seq=123]": plain ASCII with no
// character JSON, form encoding or a prompt template would escape, so it
// reaches the provider byte for byte wherever the text goes.
package seqstamp

import (
	"bytes"
	"strconv"
)

// Prefix opens a stamp; the decimal sequence number and Suffix follow.
const (
	Prefix = "[rehearse:seq="
	Suffix = "]"
)

// Append appends the stamp of seq to dst.
func Append(dst []byte, seq uint64) []byte {
	dst = append(dst, Prefix...)
	dst = strconv.AppendUint(dst, seq, 10)
	return append(dst, Suffix...)
}

// String returns the stamp of seq.
func String(seq uint64) string { return string(Append(nil, seq)) }

var prefix = []byte(Prefix)

// Find returns the sequence number of the last well-formed stamp in body.
// The last one wins: an agent runtime keeps the conversation, so a body
// may hold earlier turns' stamps before the one of the request that caused
// it (the last user message comes last). It costs one backward scan per
// candidate (bytes.LastIndex), nothing on a body without a stamp.
func Find(body []byte) (uint64, bool) {
	for end := len(body); end > 0; {
		i := bytes.LastIndex(body[:end], prefix)
		if i < 0 {
			return 0, false
		}
		if n, ok := parse(body[i+len(prefix):]); ok {
			return n, true
		}
		end = i
	}
	return 0, false
}

// parse reads "digits]" at the start of b.
func parse(b []byte) (uint64, bool) {
	j := 0
	for j < len(b) && j < 20 && b[j] >= '0' && b[j] <= '9' {
		j++
	}
	if j == 0 || j >= len(b) || b[j] != Suffix[0] {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[:j]), 10, 64)
	return n, err == nil
}
