package reports

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/halfopen/rehearse/journal"
)

// TestDecodeLineMatchesJournal checks the one-pass decoder against
// journal.Unmarshal on every line of the fixtures and on odd lines.
func TestDecodeLineMatchesJournal(t *testing.T) {
	var lines [][]byte
	for _, n := range []string{"clean", "haproxy", "quota-violated"} {
		b, err := os.ReadFile(filepath.Join("testdata", n+".jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, bytes.Split(bytes.TrimSpace(b), []byte("\n"))...)
	}
	lines = append(lines,
		[]byte(`{"t":5,"kind":"client.request","seq":1,"kind":"log","msg":"x","level":"info"}`), // duplicate kind
		[]byte(`{"kind":"upstream.request","t":7,"upstream":"u","in_flight":1,"outcome":"ok"}`),
		[]byte(`{"t":-3,"kind":"upstream.request","upstream":"u","seq":null,"in_flight":"x"}`),
		[]byte(`{"t":1,"kind":"client.request","seq":-1}`),
		[]byte(`{"t":99999999999999999999,"kind":"client.request"}`),
	)
	for i, l := range lines {
		want, werr := journal.Unmarshal(l)
		got, gerr := decodeLine(l)
		if (werr == nil) != (gerr == nil) || !reflect.DeepEqual(got, want) {
			t.Fatalf("line %d %s:\n got %#v, %v\nwant %#v, %v", i, l, got.Payload, gerr, want.Payload, werr)
		}
	}
}

func TestParallelReaderTornAndCorrupt(t *testing.T) {
	defer goleak.VerifyNone(t)
	var b strings.Builder
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, `{"t":%d,"kind":"log","level":"info","msg":"m"}`+"\n", i)
	}
	good := b.String()
	var n int
	torn, err := readParallel(strings.NewReader(good+`{"t":3001,"kind":"lo`), func(journal.Event) { n++ })
	if err != nil || !torn || n != 3000 {
		t.Errorf("torn tail: n=%d torn=%v err=%v", n, torn, err)
	}
	n = 0
	torn, err = readParallel(strings.NewReader(good+`{"t":3001,"kind":"log","level":"info","msg":"last"}`), func(journal.Event) { n++ })
	if err != nil || torn || n != 3001 {
		t.Errorf("complete last line without newline: n=%d torn=%v err=%v", n, torn, err)
	}
	lines := strings.SplitAfter(good, "\n")
	lines[1700] = "garbage\n"
	_, err = readParallel(strings.NewReader(strings.Join(lines, "")), func(journal.Event) {})
	var ce *journal.CorruptError
	if !errors.As(err, &ce) || ce.Line != 1701 {
		t.Errorf("corrupt line: %v, want line 1701", err)
	}
	_, err = Analyze(strings.NewReader(strings.Join(lines, "")))
	if err == nil || !strings.Contains(err.Error(), "journal line 1701") {
		t.Errorf("Analyze: %v", err)
	}
}
