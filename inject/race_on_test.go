//go:build race

package inject

// raceEnabled reports that the race detector is on: it slows request
// handling by an order of magnitude, so throughput floors are not asserted.
const raceEnabled = true
