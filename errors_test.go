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
