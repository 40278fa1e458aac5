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
	// A plain name, or NS:NAME with NS not "default" (docs/CONTRACTS.md §1).
	tableRE := regexp.MustCompile(`^([A-Za-z0-9_][A-Za-z0-9_-]{0,32}:)?[A-Za-z0-9_][A-Za-z0-9_.-]{0,49}$`)
	familyRE := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)
	names := []string{"ns:t", "default:t", "n-s:t", "-ns:t", "n.s:t", ":t", "ns:", "a:b:c", strings.Repeat("n", 33) + ":t", strings.Repeat("n", 34) + ":t", ".", "..", ".a", "-a", "a.", "_a", "a", "A.b-c_9", "a b", "a/b", "é", "a\n", strings.Repeat("x", 50), strings.Repeat("x", 51),
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
		if got, want := ValidateTableName(n) == nil, tableRE.MatchString(n) && !strings.HasPrefix(n, "default:"); got != want {
			t.Errorf("ValidateTableName(%q) ok = %v, want %v", n, got, want)
		}
		if got, want := ValidateFamilyName(n) == nil, familyRE.MatchString(n); got != want {
			t.Errorf("ValidateFamilyName(%q) ok = %v, want %v", n, got, want)
		}
	}
}

func TestNamespaceNames(t *testing.T) {
	for _, c := range []struct{ table, ns, name, canon string }{
		{"t", "default", "t", "t"},
		{"ns:t", "ns", "t", "ns:t"},
		{"default:t", "default", "t", "t"},
	} {
		ns, name := SplitTableName(c.table)
		if ns != c.ns || name != c.name || CanonicalTableName(c.table) != c.canon {
			t.Errorf("%q: split (%q, %q), canonical %q; want (%q, %q), %q", c.table, ns, name, CanonicalTableName(c.table), c.ns, c.name, c.canon)
		}
		if q := QualifiedTableName(ns, name); q != c.canon {
			t.Errorf("QualifiedTableName(%q, %q) = %q, want %q", ns, name, q, c.canon)
		}
		if !InNamespace(c.canon, c.ns) || !strings.HasPrefix(c.canon, NamespaceTablePrefix(c.ns)) {
			t.Errorf("%q not in namespace %q", c.canon, c.ns)
		}
	}
	if InNamespace("ns:t", "default") || InNamespace("t", "ns") || InNamespace("nsx:t", "ns") {
		t.Error("a table is in a namespace it is not in")
	}
	err := ValidateTableName("default:t")
	if err == nil || !strings.Contains(err.Error(), `write "t"`) {
		t.Errorf("default:t: %v, want an error naming the fix", err)
	}
	for _, bad := range []string{"", "-a", "a.b", "a:b", strings.Repeat("n", 34)} {
		if ValidateNamespaceName(bad) == nil {
			t.Errorf("namespace %q accepted", bad)
		}
	}
}
