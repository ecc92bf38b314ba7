package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/halfopen/rehearse"
	"github.com/halfopen/rehearse/internal/seqstamp"
)

// Request identity in the body. The sequence header identifies a request
// to the upstreams only through a gateway that forwards it; an AI agent
// runtime builds its own provider request and forwards no client header,
// but passes the client's last user message through as text. So the
// replayer also writes the sequence stamp (internal/seqstamp,
// "[rehearse:seq=N]") into the body, where Options.Identity says, and the
// fake upstreams read it back from wherever it lands in theirs.
//
// Where the stamp goes is worked out once per captured request (prepare):
// a byte offset in the captured body, so each send copies the body with
// the stamp inserted and nothing else changed (no JSON re-encoding: the
// gateway sees the captured bytes plus the stamp).

// Identity body modes (Identity.Body).
const (
	// IdentityAuto stamps the last user message of OpenAI- and
	// Anthropic-shaped chat requests (a JSON object with a "messages"
	// array), and leaves every other body alone.
	IdentityAuto = "auto"
	// IdentityOff stamps no body.
	IdentityOff = "off"
)

// Identity says where the sequence stamp goes in a request's body. The
// zero value is IdentityAuto. At most one of JSONPath and Template is
// set, and either replaces the automatic placement.
type Identity struct {
	// Body is IdentityAuto (empty means it) or IdentityOff.
	Body string `json:"body,omitempty"`
	// JSONPath is a dotted path to a string in a JSON body
	// ("input.0.text"; a negative index counts from the end, -1 the last
	// element): the stamp is appended to that string, after a space.
	JSONPath string `json:"json_path,omitempty"`
	// Template is text in the captured bodies replaced, every occurrence,
	// by the stamp (for bodies that are not JSON, or a place a capture
	// prepared: "{{rehearse_seq}}").
	Template string `json:"template,omitempty"`
}

func (id Identity) check() error {
	switch id.Body {
	case "", IdentityAuto, IdentityOff:
	default:
		return fmt.Errorf("%w: replay: identity body %q: want %q or %q", rehearse.ErrInvalid, id.Body, IdentityAuto, IdentityOff)
	}
	if id.JSONPath != "" && id.Template != "" {
		return fmt.Errorf("%w: replay: identity: set at most one of json_path and template", rehearse.ErrInvalid)
	}
	if id.Body == IdentityOff && (id.JSONPath != "" || id.Template != "") {
		return fmt.Errorf("%w: replay: identity: body off stamps nothing: json_path and template need it on", rehearse.ErrInvalid)
	}
	if id.JSONPath != "" {
		if _, err := splitPath(id.JSONPath); err != nil {
			return fmt.Errorf("%w: replay: identity json_path %q: %w", rehearse.ErrInvalid, id.JSONPath, err)
		}
	}
	return nil
}

// stampPlan is where a template's body takes the stamp: at each offset
// (ascending), pad then the stamp is inserted, replacing cut bytes.
type stampPlan struct {
	at  []int
	cut int
	pad string
}

// apply returns body with the stamp of seq in place.
func (p *stampPlan) apply(body []byte, seq uint64) []byte {
	var st [40]byte
	stamp := seqstamp.Append(append(st[:0], p.pad...), seq)
	out := make([]byte, 0, len(body)+len(p.at)*(len(stamp)-p.cut))
	from := 0
	for _, at := range p.at {
		out = append(out, body[from:at]...)
		out = append(out, stamp...)
		from = at + p.cut
	}
	return append(out, body[from:]...)
}

// planStamp works out where body takes the stamp under id; nil when it
// takes none (off, not a chat request in auto mode, the path or the
// template not found, an encoded body).
func planStamp(id Identity, body []byte, encoded bool) *stampPlan {
	if id.Body == IdentityOff || len(body) == 0 || encoded {
		return nil
	}
	switch {
	case id.Template != "":
		var at []int
		for from := 0; ; {
			i := bytes.Index(body[from:], []byte(id.Template))
			if i < 0 {
				break
			}
			at = append(at, from+i)
			from += i + len(id.Template)
		}
		if len(at) == 0 {
			return nil
		}
		return &stampPlan{at: at, cut: len(id.Template)}
	case id.JSONPath != "":
		root, err := parseJSON(body)
		if err != nil {
			return nil
		}
		path, _ := splitPath(id.JSONPath) // checked by withDefaults
		if n := root.walk(path); n != nil && n.kind == 's' {
			return &stampPlan{at: []int{n.end - 1}, pad: " "}
		}
		return nil
	default:
		if !bytes.Contains(body, []byte(`"messages"`)) {
			return nil // the cheap refusal for the bodies that are not chats
		}
		root, err := parseJSON(body)
		if err != nil {
			return nil
		}
		if n := lastUserText(root); n != nil {
			return &stampPlan{at: []int{n.end - 1}, pad: " "}
		}
		return nil
	}
}

// lastUserText finds the text the stamp goes into in a chat request: the
// content of the last user message when it is a string, else the text of
// its last text part (OpenAI's content parts, Anthropic's content blocks,
// both {"type":"text","text":…}). With no user message, none.
func lastUserText(root *jnode) *jnode {
	msgs := root.get("messages")
	if msgs == nil || msgs.kind != '[' {
		return nil
	}
	for i := len(msgs.vals) - 1; i >= 0; i-- {
		m := msgs.vals[i]
		if role := m.get("role"); role == nil || role.kind != 's' || role.str != "user" {
			continue
		}
		c := m.get("content")
		switch {
		case c == nil:
			return nil
		case c.kind == 's':
			return c
		case c.kind == '[':
			for j := len(c.vals) - 1; j >= 0; j-- {
				part := c.vals[j]
				if ty := part.get("type"); ty != nil && ty.str == "text" {
					if tx := part.get("text"); tx != nil && tx.kind == 's' {
						return tx
					}
				}
			}
		}
		return nil
	}
	return nil
}

// jnode is a JSON value with where it ends in the body: enough to insert
// text before a string's closing quote without re-encoding anything.
type jnode struct {
	kind byte // '{', '[', 's' (string), 'v' (any other value)
	end  int  // offset just past the value
	str  string
	keys []string // objects
	vals []*jnode // object values, array elements
}

func (n *jnode) get(key string) *jnode {
	if n == nil || n.kind != '{' {
		return nil
	}
	for i := len(n.keys) - 1; i >= 0; i-- { // a duplicate key: the last wins, as in encoding/json
		if n.keys[i] == key {
			return n.vals[i]
		}
	}
	return nil
}

// walk follows a split path: object keys, array indices (negative from
// the end).
func (n *jnode) walk(path []string) *jnode {
	for _, p := range path {
		switch {
		case n == nil:
			return nil
		case n.kind == '[':
			i, err := strconv.Atoi(p)
			if err != nil {
				return nil
			}
			if i < 0 {
				i += len(n.vals)
			}
			if i < 0 || i >= len(n.vals) {
				return nil
			}
			n = n.vals[i]
		default:
			n = n.get(p)
		}
	}
	return n
}

func splitPath(p string) ([]string, error) {
	parts := strings.Split(p, ".")
	for _, s := range parts {
		if s == "" {
			return nil, errors.New("empty path element (want e.g. input.0.text)")
		}
	}
	return parts, nil
}

// parseJSON parses a body into jnodes (a body with anything after its
// value is not JSON).
func parseJSON(body []byte) (*jnode, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	n, err := parseValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return n, nil
}

// maxDepth bounds the nesting parseValue follows (a hostile capture must
// not exhaust the stack).
const maxDepth = 200

func parseValue(dec *json.Decoder, depth int) (*jnode, error) {
	if depth > maxDepth {
		return nil, errors.New("nested too deep")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch v := tok.(type) {
	case json.Delim:
		n := &jnode{kind: byte(v)}
		for dec.More() {
			if n.kind == '{' {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				n.keys = append(n.keys, k.(string))
			}
			c, err := parseValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			n.vals = append(n.vals, c)
		}
		if _, err := dec.Token(); err != nil { // the closing delimiter
			return nil, err
		}
		n.end = int(dec.InputOffset())
		return n, nil
	case string:
		return &jnode{kind: 's', str: v, end: int(dec.InputOffset())}, nil
	default:
		return &jnode{kind: 'v', end: int(dec.InputOffset())}, nil
	}
}
