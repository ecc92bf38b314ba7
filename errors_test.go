package rehearse

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

type typedInvalid struct{ line int }

func (e *typedInvalid) Error() string        { return fmt.Sprintf("line %d: bad", e.line) }
func (e *typedInvalid) Is(target error) bool { return target == ErrInvalid }

func TestExitCode(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"expectations", fmt.Errorf("2 of 5: %w", ErrExpectations), 1},
		{"figures differ", fmt.Errorf("compare: %w", ErrDiffers), 1},
		{"figures cannot be judged", fmt.Errorf("compare: %w", ErrUndecided), 1},
		{"invalid wrapped", fmt.Errorf("scenario: %w", ErrInvalid), 2},
		{"invalid typed", fmt.Errorf("load: %w", &typedInvalid{3}), 2},
		{"environment", fmt.Errorf("dial: %w", ErrEnvironment), 3},
		{"unknown", errors.New("boom"), 3},
		{"interrupted", fmt.Errorf("run: %w", ErrInterrupted), 130},
		{"canceled", fmt.Errorf("run: %w", context.Canceled), 130},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExitCode(tt.err); got != tt.want {
				t.Errorf("ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestConfigError(t *testing.T) {
	for _, tt := range []struct {
		e    *ConfigError
		want string
	}{
		{&ConfigError{File: "s.yaml", Line: 3, Col: 5, Path: "replay.rate", Err: errors.New("bad")}, "s.yaml:3:5: replay.rate: bad"},
		{&ConfigError{File: "s.yaml", Line: 4, Err: errors.New("invalid YAML")}, "s.yaml:4: invalid YAML"},
		{&ConfigError{Line: 2, Col: 1, Path: "params.code", Err: errors.New("bad")}, "2:1: params.code: bad"},
		{&ConfigError{Path: "url", Err: errors.New("required")}, "url: required"},
		{&ConfigError{File: "gw.yaml", Err: errors.New("empty")}, "gw.yaml: empty"},
	} {
		if got := tt.e.Error(); got != tt.want {
			t.Errorf("got %q, want %q", got, tt.want)
		}
		if ExitCode(fmt.Errorf("load: %w", tt.e)) != ExitInvalid {
			t.Errorf("%v is not invalid input", tt.e)
		}
	}
	es := ConfigErrors{{Path: "a", Err: errors.New("x")}, {Path: "b", Err: errors.New("y")}}
	if es.Error() != "a: x\nb: y" || ExitCode(es) != ExitInvalid || ConfigErrors(nil).Err() != nil {
		t.Fatalf("errors: %v", es)
	}
	at := AtPath("faults[1]", &ConfigError{Path: "params.code", Err: errors.New("x")})
	if at.Path != "faults[1].params.code" || AtPath("gateway", errors.New("x")).Path != "gateway" || JoinPath("faults", "[2]") != "faults[2]" {
		t.Fatalf("AtPath: %v", at)
	}
}
