package scenarios

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/halfopen/rehearse"
)

// CheckListeners refuses, at their place in the file, the listen addresses
// of the run (upstreams, the built-in gateway) that other machines could
// reach, unless AllowRemote: the fake upstreams and the gateway have no
// authentication, and inject serve already asked for --allow-remote while
// run bound 0.0.0.0 as the file said.
func (s *Scenario) CheckListeners() error {
	if s.AllowRemote {
		return nil
	}
	var errs rehearse.ConfigErrors
	for i, u := range s.Upstreams {
		if u.Listen == "" {
			continue // the default, a free loopback port
		}
		if err := rehearse.CheckLoopback(u.Listen); err != nil {
			errs = append(errs, s.at(fmt.Sprintf("upstreams[%d].listen", i), err))
		}
	}
	if b := s.Gateway.Builtin; b != nil && b.Config.Listen != "" && b.Instances <= 1 {
		// A fleet's instances listen on free loopback ports
		// (GatewayListen); only a single instance takes the file's.
		if err := rehearse.CheckLoopback(b.Config.Listen); err != nil {
			errs = append(errs, s.at("gateway.builtin.config.listen", err))
		}
	}
	slices.SortStableFunc(errs, func(a, b *rehearse.ConfigError) int { // file order
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return errs.Err()
}
