package analysis

import (
	"fmt"

	"github.com/halfopen/rehearse/reports/num"
)

func init() {
	addHypothesis(hypothesis{shape: ShapeTaggedProbe, words: "tagged probes", alt: "tagged probes", test: taggedProbe})
}

// taggedProbe: the gateway marks its probes (a header or a User-Agent)
// and closes on a probe's success. The witness is a marked call while
// open; without one, nothing tells this shape from the others.
func taggedProbe(f *shapeFacts) verdict {
	if f.tagged == 0 {
		return ruledOut("no call marked as a probe reached the upstream while open")
	}
	return fits(fmt.Sprintf("%s marked as probes", num.Plural(int64(f.tagged), "call")))
}
