package observe

import "encoding/binary"

// parseLoadavg decodes a BSD struct loadavg as vm.loadavg returns it on a
// 64-bit little-endian machine: three uint32 fixed-point loads, four bytes
// of padding, and the int64 scale. It is portable so that it is tested on
// every OS.
func parseLoadavg(b []byte) (float64, bool) {
	if len(b) < 24 {
		return 0, false
	}
	scale := int64(binary.LittleEndian.Uint64(b[16:24]))
	if scale <= 0 {
		return 0, false
	}
	return float64(binary.LittleEndian.Uint32(b[0:4])) / float64(scale), true
}
