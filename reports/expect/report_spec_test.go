package expect

import (
	"strings"
	"testing"
)

func TestReportSpecValidate(t *testing.T) {
	ok := &ReportSpec{Links: &ReportLinks{Grafana: "https://g.example/d/x?from={from}&to={to}", Prometheus: "http://127.0.0.1:9090"}}
	if err := ok.Validate(); err != nil {
		t.Error(err)
	}
	for _, bad := range []ReportLinks{{Grafana: "grafana.example/d/x"}, {Prometheus: "ftp://p"}, {Prometheus: "http://u:secret@/x"}} {
		err := (&ReportSpec{Links: &bad}).Validate()
		if err == nil {
			t.Errorf("%+v accepted", bad)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("error shows a password: %v", err)
		}
	}
	var none *ReportSpec
	if none.Validate() != nil {
		t.Error("nil spec")
	}
}
