package main

import (
	"context"
	"errors"
	"testing"
)

// operator -h prints the usage and exits 0; a bad flag exits 1.
func TestHelpExitsZero(t *testing.T) {
	if code := exitCode(run(context.Background(), []string{"-h"})); code != 0 {
		t.Fatalf("operator -h: exit %d", code)
	}
	if code := exitCode(run(context.Background(), []string{"--no-such-flag"})); code != 1 {
		t.Fatalf("operator --no-such-flag: exit %d", code)
	}
	if code := exitCode(errors.New("boom")); code != 1 {
		t.Fatalf("an error: exit %d", code)
	}
}
