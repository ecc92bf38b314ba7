package rehearse

import (
	"fmt"
	"unicode"
)

// CheckName refuses a name (of a scenario, an upstream, a fault) holding a
// control character. Names go into the journal, every report and the
// terminal: an ESC in a fault name made timeline.svg malformed XML and
// carried escape sequences into report.md and report.html. YAML writes
// one only on purpose ("\e", "\x1b" in a double-quoted string), so the
// refusal says which character and where.
func CheckName(s string) error {
	for i, r := range s {
		if unicode.IsControl(r) {
			return fmt.Errorf("contains the control character U+%04X at byte %d; names are shown in reports and terminals, and take printable characters only", r, i)
		}
	}
	return nil
}
