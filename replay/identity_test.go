package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/halfopen/rehearse/internal/seqstamp"
	"github.com/halfopen/rehearse/journal"
	"github.com/halfopen/rehearse/replay/capture"
)

func TestPlanStamp(t *testing.T) {
	for _, tc := range []struct {
		name    string
		id      Identity
		body    string
		encoded bool
		want    string // the body stamped with seq 7; "" = not stamped
	}{
		{"openai string content", Identity{},
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \"there\""}],"stream":true}`, false,
			`{"model":"m","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi \"there\" [rehearse:seq=7]"}],"stream":true}`},
		{"last user message, not the last message", Identity{},
			`{"messages":[{"role":"user","content":"q"},{"role":"assistant","content":"a"}]}`, false,
			`{"messages":[{"role":"user","content":"q [rehearse:seq=7]"},{"role":"assistant","content":"a"}]}`},
		{"openai content parts", Identity{Body: IdentityAuto},
			`{"messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"x"}}]}]}`, false,
			`{"messages":[{"role":"user","content":[{"type":"text","text":"look [rehearse:seq=7]"},{"type":"image_url","image_url":{"url":"x"}}]}]}`},
		{"anthropic blocks", Identity{},
			`{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`, false,
			`{"model":"claude","max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"Hello [rehearse:seq=7]"}]}]}`},
		{"unicode escapes kept", Identity{},
			"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9 \u00e9\"}]}", false,
			"{\"messages\":[{\"role\":\"user\",\"content\":\"caf\\u00e9 \u00e9 [rehearse:seq=7]\"}]}"},
		{"not a chat", Identity{}, `{"query":"weather"}`, false, ""},
		{"no user message", Identity{}, `{"messages":[{"role":"system","content":"x"}]}`, false, ""},
		{"not JSON", Identity{}, `messages=hello`, false, ""},
		{"trailing garbage", Identity{}, `{"messages":[{"role":"user","content":"x"}]} x`, false, ""},
		{"encoded", Identity{}, `{"messages":[{"role":"user","content":"x"}]}`, true, ""},
		{"off", Identity{Body: IdentityOff}, `{"messages":[{"role":"user","content":"x"}]}`, false, ""},
		{"json path", Identity{JSONPath: "input.-1.text"},
			`{"input":[{"text":"a"},{"text":"b"}]}`, false, `{"input":[{"text":"a"},{"text":"b [rehearse:seq=7]"}]}`},
		{"json path to a number", Identity{JSONPath: "n"}, `{"n":1}`, false, ""},
		{"json path out of range", Identity{JSONPath: "input.5.text"}, `{"input":[{"text":"a"}]}`, false, ""},
		{"template", Identity{Template: "{{seq}}"},
			`q={{seq}}&again={{seq}}`, false, `q=[rehearse:seq=7]&again=[rehearse:seq=7]`},
		{"template absent", Identity{Template: "{{seq}}"}, `q=1`, false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := planStamp(tc.id, []byte(tc.body), tc.encoded)
			if tc.want == "" {
				if p != nil {
					t.Fatalf("stamped: %s", p.apply([]byte(tc.body), 7))
				}
				return
			}
			if p == nil {
				t.Fatal("not stamped")
			}
			if got := string(p.apply([]byte(tc.body), 7)); got != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if tc.id.Template == "" && !json.Valid(p.apply([]byte(tc.body), 7)) {
				t.Fatal("stamped body is not JSON")
			}
		})
	}
}

func TestIdentityOptionsChecked(t *testing.T) {
	u, _ := url.Parse("http://127.0.0.1:1")
	for _, id := range []Identity{{Body: "on"}, {JSONPath: "a", Template: "b"}, {Body: IdentityOff, JSONPath: "a"}, {JSONPath: "a..b"}} {
		if _, err := (Options{Target: u, Identity: id}).withDefaults(); err == nil {
			t.Errorf("%+v accepted", id)
		}
	}
}

// The stamp goes out on the wire with a Content-Length that counts it, a
// different number on every send, and the captured body is not changed.
func TestBodyStampOnTheWire(t *testing.T) {
	var mu sync.Mutex
	got := map[uint64]string{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil || int64(len(b)) != r.ContentLength {
			t.Errorf("body %d bytes, Content-Length %d, err %v", len(b), r.ContentLength, err)
		}
		seq, _ := strconv.ParseUint(r.Header.Get("X-Rehearse-Seq"), 10, 64)
		mu.Lock()
		got[seq] = string(b)
		mu.Unlock()
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	body := []byte(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`)
	orig := bytes.Clone(body)
	req := &capture.Request{Method: "POST", Target: "/v1/chat/completions",
		Header: []capture.HeaderField{{Name: "Content-Type", Value: "application/json"}, {Name: "Content-Length", Value: strconv.Itoa(len(body))}}, Body: body}
	plain := &capture.Request{Method: "POST", Target: "/tools/search", Body: []byte(`{"query":"x"}`)}
	mem := journal.NewMemory(nil)
	r, err := New([]*capture.Request{req, req, req, plain}, Options{Target: u, Once: true, AllowWrites: true, Rate: 200}, WithRecorder(mem))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 || got[3] != `{"query":"x"}` {
		t.Fatalf("got %d requests; the tool call %q", len(got), got[3])
	}
	delete(got, 3)
	// The journal says which requests carried the stamp.
	for _, p := range mem.OfKind(journal.KindClientRequest) {
		if ev := p.(*journal.ClientRequest); ev.BodyStamp != (ev.Seq < 3) {
			t.Errorf("seq %d: body_stamp %v", ev.Seq, ev.BodyStamp)
		}
	}
	for seq, b := range got {
		want := `{"model":"m","messages":[{"role":"user","content":"hello ` + seqstamp.String(seq) + `"}]}`
		if b != want {
			t.Errorf("seq %d: body %s, want %s", seq, b, want)
		}
	}
	if !bytes.Equal(body, orig) {
		t.Fatal("the captured body was changed")
	}
}

func FuzzPlanStamp(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":"hi"}]}`), "")
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`), "")
	f.Add([]byte(`{"input":[{"text":"a"}]}`), "input.-1.text")
	f.Add([]byte(`[[[[[[`), "0.0")
	f.Fuzz(func(t *testing.T, body []byte, path string) {
		id := Identity{JSONPath: path}
		if id.check() != nil {
			id = Identity{}
		}
		p := planStamp(id, body, false)
		if p == nil {
			return
		}
		out := p.apply(body, 42)
		// The stamp is readable back, and a valid JSON body stays valid.
		if n, ok := seqstamp.Find(out); !ok || n != 42 {
			t.Fatalf("stamp not found in %q", out)
		}
		if json.Valid(body) && !json.Valid(out) {
			t.Fatalf("stamping broke the JSON: %q", out)
		}
	})
}

// BenchmarkStampApply60KB is the per-send cost of the body stamp on an
// agent-sized chat request: one copy of the body with the token inserted.
func BenchmarkStampApply60KB(b *testing.B) {
	body := []byte(`{"model":"m","messages":[{"role":"system","content":"` + strings.Repeat("You are an agent. ", 3400) + `"},{"role":"user","content":"hello"}]}`)
	p := planStamp(Identity{}, body, false)
	if p == nil {
		b.Fatal("not stamped")
	}
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for i := range b.N {
		_ = p.apply(body, uint64(i))
	}
}
