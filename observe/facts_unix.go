//go:build linux || darwin

package observe

import "golang.org/x/sys/unix"

// kernel returns "<sysname> <release>", like uname -sr.
func kernel() string {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return ""
	}
	return unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
}
