package testutil

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"testing"
)

// XMLTokens reads the XML document b (named name in the failure) to its end
// and returns its tokens, copies safe to keep; the test fails at once when
// b is not well-formed.
func XMLTokens(t testing.TB, name string, b []byte) []xml.Token {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var toks []xml.Token
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			return toks
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", name, err)
		}
		toks = append(toks, xml.CopyToken(tok))
	}
}
