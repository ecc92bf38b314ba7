package replay

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/halfopen/rehearse/journal"
)

// dialError marks an error from establishing the connection, so that a
// refused or timed-out connect is never confused with a failure on an
// established connection.
type dialError struct{ err error }

func (e *dialError) Error() string { return e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

// isTimeout reports a deadline: the request's context deadline, or a
// socket timeout.
func isTimeout(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// isReset reports a connection reset or an abrupt close by the peer.
func isReset(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// isMalformed reports an unparseable response. net/http reports these
// with unexported error types, so the text is all there is.
func isMalformed(err error) bool {
	s := err.Error()
	for _, m := range []string{
		"malformed HTTP", "malformed MIME header", "invalid header field",
		"bogus", "unsupported transfer encoding", "invalid byte in chunk length",
		"malformed chunked encoding", "chunked line", "too many transfer encodings",
		"invalid Content-Length", "unexpected content-length", "unexpected Content-Length",
		"header line too long", "server response headers exceeded",
		"HTTP/1.x transport connection broken: malformed", "invalid Trailer key",
	} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// classifyNoResponse classifies a RoundTrip error: no response headers
// arrived. connected says whether a connection was obtained.
func classifyNoResponse(err error, connected bool) journal.Outcome {
	var de *dialError
	if errors.As(err, &de) || !connected {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return journal.OutcomeConnectRefused
		case isTimeout(err):
			return journal.OutcomeConnectTimeout
		default:
			return journal.OutcomeError
		}
	}
	switch {
	case isMalformed(err):
		return journal.OutcomeMalformed
	case isTimeout(err):
		return journal.OutcomeHeadersTimeout
	case isReset(err), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "server closed"):
		return journal.OutcomeResetBeforeHdrs
	default:
		return journal.OutcomeError
	}
}

// classifyBodyError classifies an error while reading the body, after the
// headers arrived. lengthKnown says whether the response announced a
// Content-Length.
func classifyBodyError(err error, lengthKnown bool) journal.Outcome {
	switch {
	case isTimeout(err):
		return journal.OutcomeDeadlineMidBody
	case isMalformed(err):
		return journal.OutcomeMalformed
	case isReset(err):
		return journal.OutcomeCutMidBody
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		// A clean EOF short of the announced length is a truncated
		// body; without a length (chunked, or a stream) the body was
		// cut.
		if lengthKnown {
			return journal.OutcomeTruncated
		}
		return journal.OutcomeCutMidBody
	default:
		return journal.OutcomeError
	}
}

// statusOutcome classifies a complete response by its status.
func statusOutcome(status int) journal.Outcome {
	switch {
	case status >= 500:
		return journal.OutcomeHTTP5xx
	case status >= 400:
		return journal.OutcomeHTTP4xx
	default:
		return journal.OutcomeOK
	}
}
