// Package rehearsal is the conductor: it runs one scenario end to end. It
// starts the upstreams, the built-in gateway (or checks the user's gateway
// answers), the observers and the replay on one clock, lets the fault
// timeline play, stops everything at the end or on interruption, closes the
// journal and hands it to the reports.
package rehearsal
