//go:build !linux && !darwin

package inject

import (
	"errors"
	"syscall"
)

func unsentBytes(syscall.RawConn) (int, error) {
	return 0, errors.New("send queue size unknown on this platform")
}
