package cell

import (
	"flag"
	"math/rand"
	"regexp"
	"strings"
	"testing"
)

var nameSeed = flag.Int64("name.seed", 0, "seed of TestNameValidationMatchesRegexp (0 = random)")

// TestNameValidationMatchesRegexp checks the hand-written name checks
// against the regular expressions they replace.
func TestNameValidationMatchesRegexp(t *testing.T) {
	tableRE := regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,49}$`)
	familyRE := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	names := []string{"", ".", "..", ".a", "-a", "a.", "_a", "a", "A.b-c_9", "a b", "a/b", "é", "a\n", strings.Repeat("x", 50), strings.Repeat("x", 51),
		strings.Repeat("y", 64), strings.Repeat("y", 65)}
	seed := *nameSeed
	if seed == 0 {
		seed = rand.Int63()
	}
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewSource(seed))
	const alphabet = "aZ09_.-/ \x00\xff:"
	for i := 0; i < 2000; i++ {
		b := make([]byte, r.Intn(70))
		for j := range b {
			b[j] = alphabet[r.Intn(len(alphabet))]
			if r.Intn(4) > 0 {
				b[j] = 'a' + byte(r.Intn(26))
			}
		}
		names = append(names, string(b))
	}
	for _, n := range names {
		if got, want := ValidateTableName(n) == nil, tableRE.MatchString(n); got != want {
			t.Errorf("ValidateTableName(%q) ok = %v, want %v", n, got, want)
		}
		if got, want := ValidateFamilyName(n) == nil, familyRE.MatchString(n); got != want {
			t.Errorf("ValidateFamilyName(%q) ok = %v, want %v", n, got, want)
		}
	}
}
