package rehearse

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestDurationYAML(t *testing.T) {
	tests := []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{`d: 250ms`, 250 * time.Millisecond, ""},
		{`d: "5m"`, 5 * time.Minute, ""},
		{`d: 1h30m`, 90 * time.Minute, ""},
		{`d: 30`, 0, "with a unit"},
		{`d: 1.5`, 0, "with a unit"},
		{`d: soon`, 0, `invalid duration "soon"`},
		{`d: -1s`, 0, "negative"},
		{`d: [1s]`, 0, "must be a string"},
	}
	for _, tt := range tests {
		var v struct{ D Duration }
		err := yaml.Unmarshal([]byte(tt.in), &v)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: err %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || v.D.D() != tt.want {
			t.Errorf("%s: got %v, %v", tt.in, v.D, err)
		}
	}
}

func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(struct{ D Duration }{Duration(1500 * time.Millisecond)})
	if err != nil || string(b) != `{"D":"1.5s"}` {
		t.Fatalf("%s %v", b, err)
	}
	var v struct{ D Duration }
	if err := json.Unmarshal(b, &v); err != nil || v.D.D() != 1500*time.Millisecond {
		t.Fatalf("%v %v", v, err)
	}
	if err := json.Unmarshal([]byte(`{"D":1500}`), &v); err == nil {
		t.Fatal("bare number accepted")
	}
}
