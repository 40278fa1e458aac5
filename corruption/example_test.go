package corruption_test

import (
	"errors"
	"fmt"

	"github.com/tabuladb/tabula/corruption"
)

// A package declares its sentinel with New and wraps it where it finds
// damage; callers that only need to know "damaged data, do not retry"
// check the shared marker.
func Example() {
	errBadBlock := corruption.New("mystore: corrupt")
	read := func() error {
		return fmt.Errorf("%w: 000012.sst: data block at offset 4096: checksum mismatch", errBadBlock)
	}
	err := fmt.Errorf("reading row r1: %w", read())
	fmt.Println(errors.Is(err, corruption.ErrCorrupt), errors.Is(err, errBadBlock))
	fmt.Println(err)
	// Output:
	// true true
	// reading row r1: mystore: corrupt: 000012.sst: data block at offset 4096: checksum mismatch
}
