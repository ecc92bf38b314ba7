// Package rehearse holds what every part of the harness shares beyond the
// journal: the error classes that decide the process exit code.
//
// rehearse replays captured HTTP traffic into an API or agent gateway at a
// fixed rate while fault injectors make the gateway's upstreams misbehave on
// a schedule, and reports, from the outside, what the gateway's circuit
// breakers did. The work is split into packages with one job each:
//
//   - replay: capture files to HTTP requests, and paced, measured sends;
//   - inject: fake, proxy and TCP upstreams that misbehave on schedule;
//   - gateway: the built-in reference gateway and its circuit breaker;
//   - observe: metrics scraping, health canary and platform facts;
//   - journal: the one append-only event log every component writes;
//   - scenarios: the scenario file schema and the built-in drills;
//   - rehearsal: the conductor that runs a scenario end to end;
//   - reports: breaker analysis and the HTML, Markdown, JSON and JUnit reports;
//   - launchd: weekly scheduling with a LaunchAgent (or a systemd timer).
package rehearse
