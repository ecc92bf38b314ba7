package observe

import (
	"bufio"
	"errors"
	"io"
	"time"
)

// LogEntry is one recognised log line, as ReadLog gives it.
type LogEntry struct {
	// Time is the time written in the line.
	Time time.Time
	// Pattern is the name of the pattern that recognised the line.
	Pattern string
	// Dependency is the gateway's name for the dependency, Upstream the
	// harness upstream it maps to ("" when unknown).
	Dependency, Upstream string
	// State is the state the line sets; "" for a line that sets none.
	State string
	// Until is when an open state ends; zero when the line does not say.
	Until time.Time
	// Value is the pattern's value field (1 without one).
	Value float64
	// Labels are the recorded fields.
	Labels map[string]string
}

// ReadLog reads a whole log with cfg's patterns (cfg.Path is not opened)
// and calls each for every recognised line, in file order: the way to
// check patterns on a gateway's existing log before a rehearsal. upstreams
// are the harness's upstream names, for the dependency map. The error is
// a configuration error (rehearse.ErrInvalid) or a read error; lines that
// do not decode or whose time is unreadable are counted in the stats.
func ReadLog(cfg LogConfig, r io.Reader, upstreams []string, each func(LogEntry)) (LogStats, error) {
	c, err := cfg.compile()
	if err != nil {
		return LogStats{}, err
	}
	res := resolver{depMap: c.cfg.DependencyMap, upstreams: map[string]bool{}}
	for _, u := range upstreams {
		res.upstreams[u] = true
	}
	var st LogStats
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readBoundedLine(br, &st)
		if line != nil {
			st.Lines++
			m, ok, perr := c.parseLine(line)
			switch {
			case errors.Is(perr, errLogTime):
				st.BadTime++
			case perr != nil:
				st.Undecodable++
			case ok:
				st.Recorded++
				each(LogEntry{Time: m.t, Pattern: m.rule.Name, Dependency: m.dep, Upstream: res.upstream(m.dep, nil),
					State: m.rule.State, Until: m.until, Value: m.value, Labels: m.labels})
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return st, nil
			}
			return st, err
		}
	}
}

// readBoundedLine returns the next line without its newline; a line over
// MaxLogLineBytes is skipped (counted) and nil returned for it.
func readBoundedLine(br *bufio.Reader, st *LogStats) ([]byte, error) {
	var buf []byte
	tooLong := false
	for {
		frag, err := br.ReadSlice('\n')
		if !tooLong {
			buf = append(buf, frag...)
			if len(buf) > MaxLogLineBytes+1 {
				tooLong, buf = true, nil
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if tooLong {
			st.TooLong++
			return nil, err
		}
		if len(buf) > 0 && buf[len(buf)-1] == '\n' {
			buf = buf[:len(buf)-1]
		}
		if len(buf) == 0 && err != nil {
			return nil, err
		}
		return buf, err
	}
}
