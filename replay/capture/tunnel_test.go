package capture

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The captures of testdata/tunnels (scripts/tunnelcaptures.sh and
// scripts/tunnelwrap.py; docs/capture.md says how each was made): each
// holds one curl exchange, a GET and a JSON POST on one keep-alive
// connection, inside a tunnel or on a link layer. The requests must be
// exactly those listed here, and those tshark finds with the decode
// options it needs.

// exchange is the request list of one curl exchange whose paths start
// with /kind.
func exchange(kind string) []string {
	return []string{"GET /" + kind + "/weather?city=Oslo 0", "POST /" + kind + "/search 27"}
}

type tunnelCase struct {
	file string
	want []string
	// tunnels are the Stats.Tunnels counts; skipped the Stats.Skipped
	// ones; link the link type name.
	tunnels map[string]int64
	skipped map[string]int64
	link    string
	// tshark holds the decode-as rules tshark needs to find the requests.
	tshark []string
}

func tunnelCases() []tunnelCase {
	return []tunnelCase{
		{file: "vxlan4.pcap", want: exchange("vxlan4"), link: "EN10MB", tunnels: map[string]int64{"VXLAN": 19},
			skipped: map[string]int64{"not IP: ARP (ethertype 0x0806)": 2}},
		{file: "vxlan6-8472.pcap", want: exchange("vxlan6"), link: "EN10MB", tunnels: map[string]int64{"VXLAN": 21},
			tshark: []string{"udp.port==8472,vxlan"}},
		{file: "any-vxlan.pcap", want: exchange("anyvx"), link: "LINUX_SLL2", tunnels: map[string]int64{"VXLAN": 17}},
		{file: "nflog.pcap", want: append(exchange("nflog4"), exchange("nflog6")...), link: "NFLOG"},
		{file: "plain4.pcap", want: exchange("plain4"), link: "EN10MB"},
		{file: "plain6.pcap", want: exchange("plain6"), link: "EN10MB"},
		{file: "gre.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"GRE": 18}},
		{file: "gre-frag.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"GRE": 18}},
		{file: "gretap6.pcap", want: exchange("plain6"), link: "EN10MB", tunnels: map[string]int64{"GRE": 17}},
		{file: "erspan.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"GRE": 18, "ERSPAN": 18}},
		{file: "ipip.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"IPv4-in-IP (IPIP, 4in6)": 18}},
		{file: "sit.pcap", want: exchange("plain6"), link: "EN10MB", tunnels: map[string]int64{"IPv6-in-IP (6in4, 6in6)": 17}},
		{file: "gtpu.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"GTP-U": 18}},
		{file: "gtpu-frag.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"GTP-U": 18}},
		{file: "teredo.pcap", want: exchange("plain6"), link: "EN10MB", tunnels: map[string]int64{"Teredo": 17}},
		{file: "l2tp.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"L2TP": 18}},
		{file: "mpls.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"MPLS": 18}},
		{file: "nested.pcap", want: exchange("plain4"), link: "EN10MB", tunnels: map[string]int64{"VXLAN": 18, "GRE": 18}},
		{file: "radiotap.pcap", want: exchange("plain4"), link: "IEEE802_11_RADIO", skipped: map[string]int64{
			"802.11 frames without data (management, control, null function)": 4,
			"802.11 encrypted data frames (WEP/WPA: not decrypted)":           4,
		}},
		{file: "pppoe.pcap", want: append(exchange("plain4"), exchange("plain6")...), link: "EN10MB"},
		{file: "ppp-hdlc.pcap", want: exchange("plain4"), link: "PPP_SERIAL"},
		{file: "ipoib.pcap", want: exchange("plain4"), link: "IPOIB"},
	}
}

// TestTunnelCaptures reads each capture and checks its requests, the
// tunnels and skips counted, and tshark's reading of the same file.
func TestTunnelCaptures(t *testing.T) {
	for _, tc := range tunnelCases() {
		t.Run(tc.file, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join("testdata", "tunnels", tc.file)
			reqs, st, err := ReadFile(context.Background(), path, Options{KeepSecrets: true})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range reqs {
				got = append(got, fmt.Sprintf("%s %s %d", r.Method, r.Target, len(r.Body)))
				if r.Incomplete {
					t.Errorf("%s %s incomplete: %s", r.Method, r.Target, r.Problem)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("requests\n got %q\nwant %q", got, tc.want)
			}
			if st.LinkTypes[tc.link] != st.Packets {
				t.Errorf("link types %v, want all %s", st.LinkTypes, tc.link)
			}
			if tc.tunnels == nil {
				tc.tunnels = map[string]int64{}
			}
			if !maps.Equal(st.Tunnels, tc.tunnels) {
				t.Errorf("tunnels %v, want %v", st.Tunnels, tc.tunnels)
			}
			for k, n := range tc.skipped {
				if st.Skipped[k] != n {
					t.Errorf("skipped %q: %d, want %d (all: %v)", k, st.Skipped[k], n, st.Skipped)
				}
			}
			if st.Malformed != 0 {
				t.Errorf("%d malformed packets (skipped: %v)", st.Malformed, st.Skipped)
			}
			compareTshark(t, path, reqs, false, "", tc.tshark...)
		})
	}
}

// TestStatsNameSkips: a capture whose packets are all skipped says why
// in the summary, not "check the capture filter".
func TestStatsNameSkips(t *testing.T) {
	pk := readPackets(t, filepath.Join("testdata", "tunnels", "radiotap.pcap"))
	var keep []pkt
	for _, p := range pk {
		var s segment
		if decodePacket(p.lt, p.data, p.orig, &s, &fragInfo{}) != decTCP {
			keep = append(keep, p)
		}
	}
	path := filepath.Join(t.TempDir(), "beacons.pcap")
	writePcap(t, path, binary.LittleEndian, false, linkRadiotap, keep)
	_, st, err := ReadFile(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "0 HTTP requests; 8 packets, none of them a TCP segment: 4 802.11 encrypted data frames (WEP/WPA: not decrypted), 4 802.11 frames without data (management, control, null function)"
	if h := st.Hint(); h != want {
		t.Errorf("hint\n got %q\nwant %q", h, want)
	}
	var out, errOut strings.Builder
	if _, err := Inspect(context.Background(), path, InspectOptions{Stats: true, Stdout: &out, Stderr: &errOut}); err != nil {
		t.Fatal(err)
	}
	checkShows(t, out.String(), "link type IEEE802_11_RADIO  8", "skipped  4  802.11 frames without data (management, control, null function)")
}

// TestUnknownLinkNamed: a pcapng whose interfaces are all of a link type
// the reader does not decode says which, by name and number.
func TestUnknownLinkNamed(t *testing.T) {
	ng, err := os.ReadFile(filepath.Join("testdata", "edge-ipv6.pcapng"))
	if err != nil {
		t.Fatal(err)
	}
	ng = bytes.Clone(ng)
	idb := int(binary.LittleEndian.Uint32(ng[4:8])) // the block after the section header
	if binary.LittleEndian.Uint32(ng[idb:]) != 1 {
		t.Fatalf("no interface description block at %d", idb)
	}
	binary.LittleEndian.PutUint16(ng[idb+8:], 189)
	_, st, err := ReadAll(context.Background(), bytes.NewReader(ng), Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("0 HTTP requests; %d packets, none of a link type the reader decodes: %d link type USB_LINUX (189) not decoded", st.Packets, st.Packets)
	if h := st.Hint(); h != want {
		t.Errorf("hint\n got %q\nwant %q", h, want)
	}
}

// TestNoTCPHint: a capture of UDP only still points at the capture
// filter, with the protocol named.
func TestNoTCPHint(t *testing.T) {
	pk := []pkt{{lt: linkRaw, data: ip4(17, udp(53, 53, []byte("dns")))}, {lt: linkRaw, data: ip4(1, []byte{8, 0, 0, 0})}}
	for i := range pk {
		pk[i].orig = len(pk[i].data)
	}
	var b bytes.Buffer
	writePcapTo(t, &b, binary.LittleEndian, false, linkRaw, pk)
	_, st, err := ReadAll(context.Background(), &b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := "0 HTTP requests; 2 packets, none of them a TCP segment: 1 not TCP: ICMP (IP protocol 1), 1 not TCP: UDP (IP protocol 17) (check the capture filter)"
	if h := st.Hint(); h != want {
		t.Errorf("hint\n got %q\nwant %q", h, want)
	}
}
