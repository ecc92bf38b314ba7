package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// want is what the test expects of one request.
type want struct {
	method, target string
	bodyLen        int
	chunked        bool
	noHost         bool
	incomplete     bool
}

// edgeWant is the traffic of `capturegen -mode edge` (testdata/README.md),
// with a large body of big bytes.
func edgeWant(big int) []want {
	bigLen := 18 + 27*max(1, big/27)
	return []want{
		{method: "GET", target: "/tools/weather?city=Oslo"},
		{method: "GET", target: "/tools/weather?city=Lima"},
		{method: "POST", target: "/tools/search", bodyLen: 27},
		{method: "POST", target: "/tools/vectors", bodyLen: bigLen},
		{method: "GET", target: "/tools/weather?city=Osaka"},
		{method: "POST", target: "/tools/search", bodyLen: 17},
		{method: "GET", target: "/healthz"},
		{method: "POST", target: "/tools/search", bodyLen: 24, chunked: true},
		{method: "GET", target: "http://HOST/tools/search?q=absolute"},
		{method: "OPTIONS", target: "*"},
		{method: "POST", target: "/tools/weather", bodyLen: 16},
		{method: "GET", target: "/healthz", noHost: true},
	}
}

type captureCase struct {
	name string
	// make returns the capture's path (in testdata, or derived in dir).
	make func(t *testing.T, dir string) string
	want []want
	// check runs extra assertions on the stats.
	check func(t *testing.T, st *Stats, reqs []*Request)
	// dropIncomplete leaves our incomplete requests out of the tshark
	// comparison; tsharkLoses says why tshark is known to miss requests.
	dropIncomplete bool
	// anyOrder: the edit changes which request starts first.
	anyOrder    bool
	tsharkLoses tsharkLoses
	noTshark    string
}

func testdata(name string) func(*testing.T, string) string {
	return func(*testing.T, string) string { return filepath.Join("testdata", name) }
}

// derived writes a pcap derived from a real capture by fn.
func derived(src string, nano bool, order binary.ByteOrder, lt int, fn func(t *testing.T, in []pkt) []pkt) func(*testing.T, string) string {
	return func(t *testing.T, dir string) string {
		pk := fn(t, readPackets(t, filepath.Join("testdata", src)))
		path := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".pcap")
		writePcap(t, path, order, nano, lt, pk)
		return path
	}
}

// relinked is the reason most link-type conversions are not run through
// tshark: their IP packets are those of a real capture that is. macOS
// NULL and QinQ are (tshark agreed on LOOP and RAW too when they were
// compared; each tshark run costs ~1 s of CPU, so the suite keeps two).
const relinked = "same IP packets as a real capture compared with tshark; only the link layer differs (and tshark costs ~1 s of CPU per run)"

func relinkTo(lt int, order binary.ByteOrder, af6 uint32, vlan int) func(t *testing.T, in []pkt) []pkt {
	return func(t *testing.T, in []pkt) []pkt { return relink(t, in, lt, order, af6, vlan) }
}

func same(t *testing.T, in []pkt) []pkt { return in }

// edited applies a TCP pathology to the client segments of edge-eth.
func edited(fn func(pk []pkt, data []int) []pkt) func(t *testing.T, in []pkt) []pkt {
	return func(t *testing.T, in []pkt) []pkt {
		port := serverPort(t, filepath.Join("testdata", "edge-eth.pcap.gz"))
		return fn(in, clientData(in, port))
	}
}

func serverPort(t *testing.T, path string) string {
	reqs, _, err := ReadFile(context.Background(), path, Options{})
	if err != nil || len(reqs) == 0 {
		t.Fatalf("%s: %v", path, err)
	}
	return strconv.Itoa(int(reqs[0].Flow.Dst.Port()))
}

func captureCases() []captureCase {
	le, be := binary.LittleEndian, binary.BigEndian
	edge := edgeWant(20000)
	edgeBig := edgeWant(300000)
	return []captureCase{
		{name: "pcap µs EN10MB gzip (tcpdump -i lo)", make: testdata("edge-eth.pcap.gz"), want: edgeBig},
		{name: "pcap LINUX_SLL2 (tcpdump -i any)", make: testdata("edge-sll2.pcap"), want: edge},
		{name: "pcap LINUX_SLL (tcpdump -y LINUX_SLL)", make: testdata("edge-sll.pcap"), want: edge},
		{name: "pcap ns (tcpdump --time-stamp-precision=nano)", make: testdata("edge-ns.pcap"), want: edge,
			check: func(t *testing.T, st *Stats, reqs []*Request) {
				// Nanosecond timestamps keep digits below the microsecond.
				for _, r := range reqs {
					if r.Time.Nanosecond()%1000 != 0 {
						return
					}
				}
				t.Error("no request time has sub-microsecond digits in a nanosecond capture")
			}},
		{name: "pcapng IPv6 (dumpcap)", make: testdata("edge-ipv6.pcapng"), want: edge},
		{name: "pcapng two interfaces EN10MB ns + SLL2 µs (mergecap)", make: testdata("multi-if.pcapng"), want: append(slices.Clone(edge), edge...),
			check: func(t *testing.T, st *Stats, reqs []*Request) {
				if st.LinkTypes["EN10MB"] == 0 || st.LinkTypes["LINUX_SLL2"] == 0 {
					t.Errorf("link types %v", st.LinkTypes)
				}
				if !slices.IsSortedFunc(reqs, func(a, b *Request) int { return a.Time.Compare(b.Time) }) {
					t.Error("requests not in capture order")
				}
			}},
		{name: "real retransmissions (loopback shaped with tbf in a private network namespace)", make: testdata("retrans-tbf.pcap"), want: edgeWant(60000),
			check: func(t *testing.T, st *Stats, _ []*Request) {
				if st.OutOfOrder == 0 || st.Gaps != 0 {
					t.Errorf("out of order %d, gaps %d: want some, and none", st.OutOfOrder, st.Gaps)
				}
			}, tsharkLoses: "the kernel's retransmissions arrive after later segments, and tshark 4.0 does not reassemble out-of-order segments by default"},
		{name: "NULL little-endian AF (macOS lo0), IPv4", make: derived("edge-eth.pcap.gz", false, le, linkNull, relinkTo(linkNull, le, 30, 0)), want: edgeBig, noTshark: relinked},
		{name: "NULL little-endian AF_INET6=30 (macOS lo0), IPv6", make: derived("edge-ipv6.pcapng", false, le, linkNull, relinkTo(linkNull, le, 30, 0)), want: edge},
		{name: "PKTAP around Ethernet (macOS tcpdump -i any)", make: derived("edge-ipv6.pcapng", false, le, linkPKTAP, relinkTo(linkPKTAP, nil, 0, 0)), want: edge},
		{name: "NULL big-endian AF (big-endian writer), IPv6=28 (FreeBSD)", make: derived("edge-ipv6.pcapng", false, be, linkNull, relinkTo(linkNull, be, 28, 0)), want: edge, noTshark: relinked},
		{name: "NULL AF_INET6=23 (Windows Npcap loopback)", make: derived("edge-ipv6.pcapng", false, le, linkNull, relinkTo(linkNull, le, 23, 0)), want: edge, noTshark: relinked},
		{name: "LOOP (OpenBSD) AF_INET6=24", make: derived("edge-ipv6.pcapng", false, be, linkLoop, relinkTo(linkLoop, be, 24, 0)), want: edge, noTshark: relinked},
		{name: "RAW 101 IPv4", make: derived("edge-eth.pcap.gz", false, le, linkRaw, relinkTo(linkRaw, nil, 0, 0)), want: edgeBig, noTshark: relinked},
		{name: "RAW 101 IPv6", make: derived("edge-ipv6.pcapng", false, le, linkRaw, relinkTo(linkRaw, nil, 0, 0)), want: edge, noTshark: relinked},
		{name: "DLT_RAW 12", make: derived("edge-sll.pcap", false, le, linkRaw12, relinkTo(linkRaw12, nil, 0, 0)), want: edge,
			noTshark: relinked},
		{name: "DLT_RAW 14", make: derived("edge-sll.pcap", false, le, linkRaw14, relinkTo(linkRaw14, nil, 0, 0)), want: edge,
			noTshark: relinked},
		{name: "PPPoE session over Ethernet", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, relinkTo(linkEthernet, nil, 0, 3)), want: edgeBig, noTshark: relinked},
		{name: "PPP (RFC 1662 framing)", make: derived("edge-eth.pcap.gz", false, le, linkPPP, relinkTo(linkPPP, nil, 0, 0)), want: edgeBig},
		{name: "Cisco HDLC, IPv6", make: derived("edge-ipv6.pcapng", false, le, linkCHDLC, relinkTo(linkCHDLC, nil, 0, 0)), want: edge},
		{name: "IPV6 229", make: derived("edge-ipv6.pcapng", false, le, linkIPv6, relinkTo(linkIPv6, nil, 0, 0)), want: edge, noTshark: relinked},
		{name: "Ethernet 802.1Q", make: derived("edge-sll2.pcap", false, le, linkEthernet, relinkTo(linkEthernet, nil, 0, 1)), want: edge, noTshark: relinked},
		{name: "Ethernet QinQ 802.1ad+802.1Q", make: derived("edge-sll2.pcap", false, le, linkEthernet, relinkTo(linkEthernet, nil, 0, 2)), want: edge},
		{name: "pcap ns big-endian", make: derived("edge-ns.pcap", true, be, linkEthernet, same), want: edge, noTshark: relinked},
		{name: "pcap µs big-endian", make: derived("edge-eth.pcap.gz", false, be, linkEthernet, same), want: edgeBig, noTshark: relinked},
		{name: "reordered segments", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, edited(func(pk []pkt, data []int) []pkt {
			// Swap neighbouring client segments: every pair, all streams.
			for i := 0; i+1 < len(data); i += 2 {
				pk[data[i]], pk[data[i+1]] = pk[data[i+1]], pk[data[i]]
			}
			return pk
		})), want: edgeBig, anyOrder: true, check: func(t *testing.T, st *Stats, _ []*Request) {
			if st.OutOfOrder == 0 {
				t.Error("no out-of-order segment counted")
			}
		}, tsharkLoses: "tshark 4.0 does not reassemble out-of-order segments by default (tcp.reassemble_out_of_order: FALSE)"},
		{name: "retransmitted segments", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, edited(func(pk []pkt, data []int) []pkt {
			var out []pkt
			j := 0
			for i, p := range pk {
				out = append(out, p)
				if j < len(data) && data[j] == i {
					out = append(out, p) // the same segment again
					j++
				}
			}
			return out
		})), want: edgeBig, check: func(t *testing.T, st *Stats, _ []*Request) {
			if st.Retransmitted == 0 {
				t.Error("no retransmission counted")
			}
		}},
		{name: "overlapping re-segmentation", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, edited(func(pk []pkt, data []int) []pkt {
			var out []pkt
			j := 0
			for i, p := range pk {
				if j < len(data) && data[j] == i {
					j++
					if n := tcpOf(p).payload; n >= 3 {
						// [0, 2n/3) then [n/3, n): the second repeats a third.
						out = append(out, resegment(p, 0, 2*n/3), resegment(p, n/3, n))
						continue
					}
				}
				out = append(out, p)
			}
			return out
		})), want: edgeBig, check: func(t *testing.T, st *Stats, _ []*Request) {
			if st.Overlapping == 0 {
				t.Error("no overlap counted")
			}
		}, tsharkLoses: "tshark 4.0 takes a segment that partly repeats bytes it has seen for a retransmission and drops its new bytes, so its reassembly stalls"},
		{name: "gap inside a body", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, edited(func(pk []pkt, data []int) []pkt {
			// Drop the middle segment of the 300 KB body: the largest
			// client segment run.
			big := -1
			for _, i := range data {
				if tcpOf(pk[i]).payload > 30000 {
					big = i
				}
			}
			return slices.Delete(pk, big, big+1)
		})), want: func() []want {
			w := edgeWant(300000)
			w[3].incomplete = true
			return w
		}(), check: func(t *testing.T, st *Stats, reqs []*Request) {
			if st.Gaps != 1 || st.Incomplete != 1 {
				t.Errorf("gaps %d incomplete %d, want 1 and 1", st.Gaps, st.Incomplete)
			}
			if r := reqs[3]; !strings.Contains(r.Problem, "body bytes missing") || len(r.Body) >= 300015 {
				t.Errorf("problem %q, body %d", r.Problem, len(r.Body))
			}
		}, dropIncomplete: true},
		{name: "gap losing a whole request", make: derived("edge-eth.pcap.gz", false, le, linkEthernet, edited(func(pk []pkt, data []int) []pkt {
			for _, i := range data {
				if bytes.Contains(pk[i].data, []byte("OPTIONS * ")) {
					return slices.Delete(pk, i, i+1)
				}
			}
			panic("no OPTIONS segment")
		})), want: slices.Delete(edgeWant(300000), 9, 10), check: func(t *testing.T, st *Stats, _ []*Request) {
			if st.Gaps != 1 || !slices.ContainsFunc(st.Warnings, func(w Warning) bool { return strings.Contains(w.Msg, "bytes missing from the capture") }) {
				t.Errorf("gaps %d, warnings %v", st.Gaps, st.Warnings)
			}
		}},
		{name: "snap length 120 (tcpdump -s 120)", make: testdata("snaplen-120.pcap"), noTshark: "tshark does not report requests whose headers were cut",
			check: func(t *testing.T, st *Stats, reqs []*Request) {
				if len(reqs) != 20 || st.Incomplete != 20 || st.Cut != 20 {
					t.Errorf("%d requests, %d incomplete, %d cut; want 20 each", len(reqs), st.Incomplete, st.Cut)
				}
				if !slices.ContainsFunc(st.Warnings, func(w Warning) bool { return strings.Contains(w.Msg, "snap length") && w.Packet > 0 }) {
					t.Errorf("no snap-length warning with a packet number: %v", st.Warnings)
				}
			}},
	}
}

func TestCaptures(t *testing.T) {
	for _, tc := range captureCases() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			st := tc.run(t)
			// The edge captures hold HTTPS beside the plain requests.
			if tc.want != nil && st.TLSStreams == 0 {
				t.Errorf("TLS streams not counted: %s", st)
			}
		})
	}
}

// run reads the case's capture and checks it: the requests against want,
// the stats with check, and the requests against tshark's reading of the
// same file unless noTshark says why not. It returns the stats for checks
// of the caller's own.
func (tc captureCase) run(t *testing.T) *Stats {
	t.Helper()
	path := tc.make(t, t.TempDir())
	reqs, st, err := ReadFile(context.Background(), path, Options{KeepSecrets: true})
	if err != nil {
		t.Fatalf("%v (stats: %s)", err, st)
	}
	if tc.want != nil {
		checkWant(t, reqs, tc.want, tc.anyOrder)
	}
	if tc.check != nil {
		tc.check(t, st, reqs)
	}
	if tc.noTshark != "" {
		t.Logf("not compared with tshark: %s", tc.noTshark)
		return st
	}
	compareTshark(t, path, reqs, tc.dropIncomplete, tc.tsharkLoses)
	return st
}

func checkWant(t *testing.T, reqs []*Request, ws []want, anyOrder bool) {
	t.Helper()
	if anyOrder {
		reqs = slices.Clone(reqs)
		ws = slices.Clone(ws)
		slices.SortStableFunc(reqs, func(a, b *Request) int {
			return strings.Compare(a.Method+a.Path()+strconv.Itoa(len(a.Body)), b.Method+b.Path()+strconv.Itoa(len(b.Body)))
		})
		slices.SortStableFunc(ws, func(a, b want) int {
			pa, pb := strings.TrimPrefix(a.target, "http://HOST"), strings.TrimPrefix(b.target, "http://HOST")
			pa, _, _ = strings.Cut(pa, "?")
			pb, _, _ = strings.Cut(pb, "?")
			return strings.Compare(a.method+pa+strconv.Itoa(a.bodyLen), b.method+pb+strconv.Itoa(b.bodyLen))
		})
	}
	if len(reqs) != len(ws) {
		for _, r := range reqs {
			t.Logf("got %s %s %d incomplete=%v %s", r.Method, r.Target, len(r.Body), r.Incomplete, r.Problem)
		}
		t.Fatalf("%d requests, want %d", len(reqs), len(ws))
	}
	for i, w := range ws {
		r := reqs[i]
		target := r.Target
		if strings.HasPrefix(target, "http://") {
			target = "http://HOST" + r.Path() + target[strings.Index(target, r.Path())+len(r.Path()):]
		}
		if r.Method != w.method || target != w.target || len(r.Body) != w.bodyLen && !w.incomplete ||
			r.Chunked != w.chunked || (r.Host == "") != w.noHost || r.Incomplete != w.incomplete || (r.Index != i && !anyOrder) {
			t.Errorf("request %d: got #%d %s %s host %q body %d chunked %v incomplete %v (%s); want %+v",
				i, r.Index, r.Method, r.Target, r.Host, len(r.Body), r.Chunked, r.Incomplete, r.Problem, w)
		}
	}
}

// tsharkLoses marks cases where tshark finds fewer requests than we do
// (and says why): the test then checks that every request tshark finds is
// one of ours.
type tsharkLoses string

// compareTshark checks our requests against tshark's on the same file:
// method, target and host as multisets (tshark lists a request at the
// packet that completes it, we at the packet that starts it), and the
// Content-Length of every request tshark can attribute one to. With
// pipelining tshark prints the values of several requests in one line
// and leaves out absent ones, so a frame's Content-Length values are only
// attributable when there is one per request.
// decodeAs are more decode-as rules ("udp.port==8472,vxlan": tunnels on
// ports tshark does not know).
func compareTshark(t *testing.T, path string, reqs []*Request, dropIncomplete bool, loses tsharkLoses, decodeAs ...string) {
	t.Helper()
	if _, err := exec.LookPath("tshark"); err != nil {
		t.Skip("tshark not installed: cannot compare with it (apt-get install tshark)")
	}
	ports := map[uint16]bool{}
	var ours, oursCL []string
	for _, r := range reqs {
		ports[r.Flow.Dst.Port()] = true
		if r.Incomplete && dropIncomplete {
			continue // tshark drops a request with a hole without a word
		}
		line := fmt.Sprintf("%s %s %s", r.Method, asTshark(r.Target), r.Get("Host"))
		ours = append(ours, line)
		oursCL = append(oursCL, line+" "+r.Get("Content-Length"))
	}
	decodes := slices.Clone(decodeAs)
	for p := range ports {
		decodes = append(decodes, fmt.Sprintf("tcp.port==%d,http", p))
	}
	theirs, theirsCL := tsharkRequests(t, path, decodes...)
	slices.Sort(theirs)
	slices.Sort(ours)
	if loses != "" {
		t.Logf("tshark finds %d requests, we find %d: %s", len(theirs), len(ours), loses)
		if missing := minus(theirs, ours); len(missing) > 0 {
			t.Errorf("tshark finds requests we do not:\n  %s", strings.Join(missing, "\n  "))
		}
		return
	}
	if !slices.Equal(theirs, ours) {
		t.Errorf("tshark disagrees on %s:\ntshark:\n  %s\nours:\n  %s", path, strings.Join(theirs, "\n  "), strings.Join(ours, "\n  "))
	}
	if missing := minus(theirsCL, oursCL); len(missing) > 0 {
		t.Errorf("Content-Length: tshark has\n  %s\nours:\n  %s", strings.Join(missing, "\n  "), strings.Join(oursCL, "\n  "))
	}
}

// tsharkRequests returns the requests `tshark -Y http.request` finds in
// path, with the given decode-as rules ("tcp.port==1080,socks"), as
// "METHOD TARGET HOST" lines, and those lines with the Content-Length
// where tshark's output attributes one. The caller has checked that
// tshark is installed.
func tsharkRequests(t *testing.T, path string, decodes ...string) (theirs, theirsCL []string) {
	t.Helper()
	args := []string{"-r", path, "-n", "-Y", "http.request", "-T", "fields", "-E", "separator=/t", "-E", "aggregator=|",
		"-e", "http.request.method", "-e", "http.request.uri", "-e", "http.host", "-e", "http.content_length_header"}
	for _, d := range decodes {
		args = append(args, "-d", d)
	}
	out, err := exec.Command("tshark", args...).Output()
	if err != nil {
		t.Fatalf("tshark %v: %v", args, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "\t")
		for len(f) < 4 {
			f = append(f, "")
		}
		methods, uris, hosts, cls := strings.Split(f[0], "|"), strings.Split(f[1], "|"), strings.Split(f[2], "|"), strings.Split(f[3], "|")
		for i := range methods {
			host := ""
			if len(hosts) == len(methods) {
				host = hosts[i]
			}
			l := fmt.Sprintf("%s %s %s", methods[i], uris[i], host)
			theirs = append(theirs, l)
			if len(methods) == 1 || len(cls) == len(methods) {
				theirsCL = append(theirsCL, l+" "+cls[i])
			}
		}
	}
	return theirs, theirsCL
}

// asTshark writes a target as tshark 4.0 prints it: each byte outside
// ASCII becomes U+FFFD (it decodes the request line as ASCII).
func asTshark(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			b.WriteRune('\uFFFD')
		} else {
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

// minus returns the elements of a not in b (multisets).
func minus(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}
