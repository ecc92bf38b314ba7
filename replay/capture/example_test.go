package capture_test

import (
	"context"
	"fmt"
	"regexp"

	"github.com/halfopen/rehearse/replay/capture"
)

func ExampleReadFile() {
	reqs, st, err := capture.ReadFile(context.Background(), "testdata/edge-sll2.pcap", capture.Options{
		Filter: capture.Filter{Methods: []string{"POST"}, Path: regexp.MustCompile(`^/tools/`)},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, r := range reqs {
		fmt.Println(r.Index, r.Method, r.Target, len(r.Body), r.Chunked)
	}
	fmt.Println(st.Delivered, "delivered,", st.Filtered, "filtered out,", st.TLSStreams, "TLS streams")
	// Output:
	// 0 POST /tools/search 27 false
	// 1 POST /tools/vectors 19998 false
	// 2 POST /tools/search 17 false
	// 3 POST /tools/search 24 true
	// 4 POST /tools/weather 16 false
	// 5 delivered, 7 filtered out, 2 TLS streams
}

func ExampleExtract() {
	n := 0
	st, err := capture.ExtractFile(context.Background(), "../../scenarios/captures/agent-gateway.pcapng", capture.Options{},
		func(r *capture.Request) error {
			if r.Get("Authorization") != "" && r.Get("Authorization") != capture.Redacted {
				return fmt.Errorf("request %d: secret not redacted", r.Index)
			}
			n++
			return nil
		})
	fmt.Println(n, err, st.Incomplete, st.Methods["POST"], st.Methods["GET"])
	// Output:
	// 200 <nil> 0 180 20
}
