package corruption_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/corruption"
)

func TestSentinelsWrapTheMarker(t *testing.T) {
	a, b := corruption.New("a: corrupt"), corruption.New("b: corrupt")
	wrapped := fmt.Errorf("open x: %w", fmt.Errorf("%w: block at offset 7", a))
	if !errors.Is(wrapped, corruption.ErrCorrupt) {
		t.Error("a wrapped package sentinel does not match the marker")
	}
	if !errors.Is(wrapped, a) {
		t.Error("a wrapped package sentinel does not match itself")
	}
	if errors.Is(wrapped, b) {
		t.Error("one package's sentinel matches another's")
	}
	if got := a.Error(); got != "a: corrupt" {
		t.Errorf("message %q, want the package's own %q", got, "a: corrupt")
	}
	if errors.Is(errors.New("a: corrupt"), corruption.ErrCorrupt) {
		t.Error("an unrelated error with the same text matches the marker")
	}
}
