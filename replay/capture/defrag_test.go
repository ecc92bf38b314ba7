package capture

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
	"time"
)

// fragmentIP splits an IP packet into fragments whose payloads are at
// most size bytes (a multiple of 8), as a router (IPv4) or the source
// (IPv6, with a fragment header) does. Packets that fit are returned
// whole.
func fragmentIP(ip []byte, size int, id uint32) [][]byte {
	var hdr, payload []byte
	v6 := ip[0]>>4 == 6
	if v6 {
		hdr, payload = ip[:40], ip[40:40+int(binary.BigEndian.Uint16(ip[4:6]))]
	} else {
		ihl := int(ip[0]&0x0f) * 4
		hdr, payload = ip[:ihl], ip[ihl:binary.BigEndian.Uint16(ip[2:4])]
	}
	if len(payload) <= size {
		return [][]byte{ip}
	}
	var out [][]byte
	for off := 0; off < len(payload); off += size {
		end := min(off+size, len(payload))
		more := end < len(payload)
		f := slices.Clone(hdr)
		if v6 {
			next := f[6]
			f[6] = 44
			fh := make([]byte, 8)
			fh[0] = next
			v := uint16(off)
			if more {
				v |= 1
			}
			binary.BigEndian.PutUint16(fh[2:], v)
			binary.BigEndian.PutUint32(fh[4:], id)
			f = append(f, fh...)
			f = append(f, payload[off:end]...)
			binary.BigEndian.PutUint16(f[4:], uint16(len(f)-40))
		} else {
			v := uint16(off / 8)
			if more {
				v |= 0x2000
			}
			binary.BigEndian.PutUint16(f[4:], uint16(id))
			binary.BigEndian.PutUint16(f[6:], v)
			f = append(f, payload[off:end]...)
			binary.BigEndian.PutUint16(f[2:], uint16(len(f)))
		}
		out = append(out, f)
	}
	return out
}

// fragmented fragments every IP packet of a real capture larger than
// size payload bytes; order rearranges each packet's fragments (the last
// first, say, as Linux sends IPv6 fragments; or with one duplicated).
func fragmented(size int, order func([][]byte) [][]byte) func(t *testing.T, in []pkt) []pkt {
	return func(t *testing.T, in []pkt) []pkt {
		raw := relink(t, in, linkRaw, nil, 0, 0)
		var out []pkt
		for i, p := range raw {
			frags := fragmentIP(p.data, size, uint32(0x1000+i))
			if len(frags) > 1 && order != nil {
				frags = order(frags)
			}
			for _, f := range frags {
				out = append(out, pkt{p.ts, linkRaw, f, len(f)})
			}
		}
		return out
	}
}

func reversed(f [][]byte) [][]byte { slices.Reverse(f); return f }

func withDuplicate(f [][]byte) [][]byte { return append(f, f[0]) }

func TestFragmentedCaptures(t *testing.T) {
	le := binary.LittleEndian
	cases := []captureCase{
		{name: "IPv4 fragments, real (router with MTU 576, tcpdump)", make: testdata("frag-ipv4.pcap"),
			check: func(t *testing.T, st *Stats, reqs []*Request) {
				got := []string{}
				for _, r := range reqs {
					got = append(got, r.Method+" "+r.Target+" "+r.Get("Content-Length"))
				}
				want := []string{"POST /tools/search 3313", "GET /tools/weather?city=Oslo ", "GET /events "}
				if !slices.Equal(got, want) || st.Incomplete != 0 {
					t.Errorf("requests %q, want %q (%d incomplete)", got, want, st.Incomplete)
				}
				if st.Fragments == 0 || st.Reassembled == 0 || st.Fragments < 2*st.Reassembled || len(st.FragmentsDropped) != 0 {
					t.Errorf("fragments %d reassembled %d dropped %v", st.Fragments, st.Reassembled, st.FragmentsDropped)
				}
				if r := reqs[0]; len(r.Body) != 3313 || !bytes.HasSuffix(r.Body, []byte(`fragmented "}`)) {
					t.Errorf("body %d bytes, ends %q", len(r.Body), r.Body[max(0, len(r.Body)-20):])
				}
			}},
		{name: "IPv6 fragments, scapy's fragment6 (scripts/frag6.py)", make: testdata("frag-ipv6.pcap"), want: edgeWant(20000),
			check: func(t *testing.T, st *Stats, reqs []*Request) {
				if st.Fragments != 26 || st.Reassembled != 6 || len(st.FragmentsDropped) != 0 {
					t.Errorf("fragments %d reassembled %d dropped %v", st.Fragments, st.Reassembled, st.FragmentsDropped)
				}
			}},
		{name: "IPv4 fragments of 64 KB loopback segments, last first", make: derived("edge-eth.pcap.gz", false, le, linkRaw, fragmented(552, reversed)), want: edgeWant(300000),
			check: fragChecks(false)},
		{name: "IPv6 fragments (fragment header), last first", make: derived("edge-ipv6.pcapng", false, le, linkRaw, fragmented(1232, reversed)), want: edgeWant(20000),
			check: fragChecks(false)},
		{name: "IPv6 fragments, in order, one duplicated", make: derived("edge-ipv6.pcapng", false, le, linkRaw, fragmented(512, withDuplicate)), want: edgeWant(20000),
			check: fragChecks(true), noTshark: "same IP packets as the IPv6 case above"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}

func fragChecks(dups bool) func(t *testing.T, st *Stats, reqs []*Request) {
	return func(t *testing.T, st *Stats, reqs []*Request) {
		if st.Reassembled == 0 || len(st.FragmentsDropped) != 0 || (st.FragmentDuplicates > 0) != dups {
			t.Errorf("reassembled %d, dropped %v, duplicates %d", st.Reassembled, st.FragmentsDropped, st.FragmentDuplicates)
		}
		if st.FragmentBytesPeak == 0 || st.FragmentBytesPeak > DefaultMaxFragmentBytes {
			t.Errorf("peak fragment memory %d", st.FragmentBytesPeak)
		}
	}
}

// fragCapture is a synthetic capture of one connection whose request
// packet is cut into fragments of size bytes, arranged by edit.
func fragCapture(t testing.TB, req []byte, size int, edit func(frags []pkt) []pkt) []byte {
	var b bytes.Buffer
	s := newSynth(t, &b)
	c := s.conn("10.0.0.1:40000", "10.0.0.2:8080").handshake()
	c.send(req)
	c.reply([]byte("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
	c.close()
	in := readPacketsFrom(t, b.Bytes())
	var out []pkt
	for i, p := range in {
		frags := fragmentIP(p.data[14:], size, uint32(7+i))
		if len(frags) == 1 {
			out = append(out, p)
			continue
		}
		var fp []pkt
		for _, f := range frags {
			data := append(slices.Clone(p.data[:14]), f...)
			fp = append(fp, pkt{p.ts, linkEthernet, data, len(data)})
		}
		out = append(out, edit(fp)...)
	}
	var w bytes.Buffer
	writePcapTo(t, &w, le(), false, linkEthernet, out)
	return w.Bytes()
}

func le() binary.ByteOrder { return binary.LittleEndian }

func TestDefragLimits(t *testing.T) {
	req := []byte("POST /upload HTTP/1.1\r\nHost: h\r\nContent-Length: 2000\r\n\r\n" + strings.Repeat("x", 2000))
	cases := []struct {
		name   string
		opt    Options
		edit   func([]pkt) []pkt
		reason string
		// complete: the request still comes out whole.
		complete bool
	}{
		{name: "in order", edit: func(f []pkt) []pkt { return f }, complete: true},
		{name: "timeout: the last fragment 2 minutes late", edit: func(f []pkt) []pkt {
			f[len(f)-1].ts = f[len(f)-1].ts.Add(2 * time.Minute)
			return f
		}, reason: fragTimeout},
		{name: "timeout option", opt: Options{FragmentTimeout: 10 * time.Millisecond}, edit: func(f []pkt) []pkt {
			f[len(f)-1].ts = f[len(f)-1].ts.Add(time.Second)
			return f
		}, reason: fragTimeout},
		{name: "memory cap", opt: Options{MaxFragmentBytes: 1000}, edit: func(f []pkt) []pkt { return f }, reason: fragMemory},
		{name: "overlap with different bytes", edit: func(f []pkt) []pkt {
			g := slices.Clone(f[1].data)
			g[len(g)-1] ^= 0xff
			return append(f[:2], append([]pkt{{f[1].ts, f[1].lt, g, len(g)}}, f[2:]...)...)
		}, reason: fragOverlap},
		{name: "a fragment cut by the snap length", edit: func(f []pkt) []pkt {
			f[1].orig = len(f[1].data)
			f[1].data = f[1].data[:len(f[1].data)-100]
			return f
		}, reason: fragCut},
		{name: "missing last fragment", edit: func(f []pkt) []pkt { return f[:len(f)-1] }, reason: fragEnded},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			capt := fragCapture(t, req, 512, tc.edit)
			tc.opt.KeepSecrets = true
			reqs, st := extractBytes(t, capt, tc.opt)
			if tc.complete {
				if len(reqs) != 1 || reqs[0].Incomplete || len(reqs[0].Body) != 2000 || st.Reassembled != 1 {
					t.Fatalf("requests %v, stats %s", reqs, st)
				}
				return
			}
			if st.FragmentsDropped[tc.reason] == 0 {
				t.Errorf("dropped %v, want some for %q", st.FragmentsDropped, tc.reason)
			}
			if !slices.ContainsFunc(st.Warnings, func(w Warning) bool { return strings.Contains(w.Msg, tc.reason) }) {
				t.Errorf("no warning about %q: %v", tc.reason, st.Warnings)
			}
			// The request is never lost silently: the TCP reassembly sees
			// the hole the datagram leaves and reports it incomplete.
			if len(reqs) != 1 || !reqs[0].Incomplete {
				t.Errorf("requests %+v: want one, incomplete", reqs)
			}
			if tc.reason == fragEnded {
				// Only the handshake and the reply are whole segments.
				if st.Reassembled != 0 || !strings.Contains(st.String(), "fragments dropped") {
					t.Errorf("summary %s", st)
				}
			}
			if tc.opt.MaxFragmentBytes > 0 && st.FragmentBytesPeak > int64(tc.opt.MaxFragmentBytes)+512+fragOverhead {
				t.Errorf("peak %d over the cap %d", st.FragmentBytesPeak, tc.opt.MaxFragmentBytes)
			}
		})
	}
}

// TestDefragNonTCP: fragments of other protocols are not held.
func TestDefragNonTCP(t *testing.T) {
	ip := make([]byte, 20+3000)
	ip[0], ip[9] = 0x45, 17 // UDP
	binary.BigEndian.PutUint16(ip[2:], uint16(len(ip)))
	copy(ip[12:], []byte{10, 0, 0, 1, 10, 0, 0, 2})
	var pk []pkt
	ts := time.Unix(1, 0)
	for _, f := range fragmentIP(ip, 1480, 9) {
		pk = append(pk, pkt{ts, linkRaw, f, len(f)})
	}
	var b bytes.Buffer
	writePcapTo(t, &b, le(), false, linkRaw, pk)
	_, st := extractBytes(t, b.Bytes(), Options{})
	if st.NotTCP != int64(len(pk)) || st.Fragments != 0 || st.FragmentBytesPeak != 0 {
		t.Errorf("not TCP %d, fragments %d, peak %d", st.NotTCP, st.Fragments, st.FragmentBytesPeak)
	}
}
