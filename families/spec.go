package families

import (
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/tabuladb/tabula/cell"
)

// The CLI form of a family, as `tabula family add` and `tabula create`
// take it:
//
//	NAME[:OPTION=VALUE[,OPTION=VALUE...]]
//
//	versions=N                        keep the newest N versions (0: no limit)
//	ttl=DURATION                      Go duration ("90m", "36h") or whole days ("7d"); 0 or never: none
//	gc=union|intersection             how versions and ttl combine
//	gc=RULE                           a nested GC rule instead of versions, ttl and gc=union|intersection:
//	                                    versions=N                       keep the newest N >= 1 versions
//	                                    age=DURATION                     condemn cells older than DURATION
//	                                    union(RULE[,RULE...])            condemn what any RULE condemns
//	                                    intersection(RULE[,RULE...])     condemn what every RULE condemns
//	                                  e.g. gc=union(versions=3,intersection(age=7d,versions=1));
//	                                  an empty union() or intersection() condemns nothing
//	compression=none|snappy|zstd      (Parse's default: snappy)
//	bloom=none|row|row+column         (Parse's default: row)
//	blocksize=N[k|m]                  SSTable block size, 1k..4m
//	inmemory=true|false               keep the family's blocks cached
//	type=bytes|sum|min|max            what cells hold: bytes, or an int64 aggregate (fixed at creation)
const validOptions = "versions, ttl, gc, compression, bloom, blocksize, inmemory, type"

const day = 24 * time.Hour

// Parse parses the CLI form of a family (see above), starting from
// Default(NAME), and validates the result.
func Parse(spec string) (Family, error) {
	name, opts, hasOpts := strings.Cut(strings.TrimSpace(spec), ":")
	name = strings.TrimSpace(name)
	f := Default(name)
	if err := cell.ValidateFamilyName(name); err != nil {
		return Family{}, err
	}
	if hasOpts {
		if _, err := f.apply(opts); err != nil {
			return Family{}, err
		}
	}
	if err := f.Validate(); err != nil {
		return Family{}, err
	}
	return f, nil
}

// ApplyOptions returns f modified by opts, a comma-separated list of the
// options Parse takes ("versions=3,ttl=24h"), and validates the result. It
// is what `tabula family modify` does. The name and the value type cannot
// be changed (type= may only repeat the current type).
func ApplyOptions(f Family, opts string) (Family, error) {
	old := f
	n, err := f.apply(opts)
	if err != nil {
		return Family{}, err
	}
	if n == 0 {
		return Family{}, cell.Invalidf("family %s: no options to apply; give some of %s", f.Name, validOptions)
	}
	if err := f.Validate(); err != nil {
		return Family{}, err
	}
	if err := CheckModify(old, f); err != nil {
		return Family{}, err
	}
	return f, nil
}

// Spec returns the CLI form of f; Parse(f.Spec()) gives f back. Options
// equal to Parse's defaults are left out.
func (f Family) Spec() string {
	var opts []string
	if f.MaxVersions != 0 {
		opts = append(opts, "versions="+strconv.Itoa(f.MaxVersions))
	}
	if f.TTL != 0 {
		opts = append(opts, "ttl="+FormatDuration(f.TTL))
	}
	if f.GC != GCUnion {
		opts = append(opts, "gc="+f.GC.String())
	}
	if f.GCRule != nil {
		opts = append(opts, "gc="+f.GCRule.String())
	}
	if f.Compression != CompressionSnappy {
		opts = append(opts, "compression="+f.Compression.String())
	}
	if f.Bloom != BloomRow {
		opts = append(opts, "bloom="+f.Bloom.String())
	}
	if f.BlockSize != 0 {
		opts = append(opts, "blocksize="+formatSize(f.BlockSize))
	}
	if f.InMemory {
		opts = append(opts, "inmemory=true")
	}
	if f.ValueType != Bytes {
		opts = append(opts, "type="+f.ValueType.String())
	}
	if len(opts) == 0 {
		return f.Name
	}
	return f.Name + ":" + strings.Join(opts, ",")
}

// apply sets the options of a comma-separated list on f and returns how
// many it set. Empty items are ignored; an option given twice is an error.
// The GC policy has two forms: options of one form (versions, ttl,
// gc=union|intersection; or gc=RULE) clear the other, and giving both
// forms in one list is an error.
func (f *Family) apply(opts string) (int, error) {
	items, err := splitTop(opts)
	if err != nil {
		return 0, cell.Invalidf("family %s: options %q: %v", f.Name, opts, err)
	}
	seen := map[string]bool{}
	simple, nested := false, false
	for _, item := range items {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		key, val, ok := strings.Cut(item, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		val = strings.TrimSpace(val)
		if !ok {
			return 0, cell.Invalidf("family %s: option %q has no value; write OPTION=VALUE with OPTION one of %s", f.Name, item, validOptions)
		}
		if seen[key] {
			return 0, cell.Invalidf("family %s: option %s is given twice", f.Name, key)
		}
		seen[key] = true
		switch {
		case key == "gc" && strings.ContainsAny(val, "=()"):
			nested = true
		case key == "versions" || key == "ttl" || key == "gc":
			simple = true
		}
		if err := f.set(key, val); err != nil {
			return 0, err
		}
	}
	switch {
	case simple && nested:
		return 0, cell.Invalidf("family %s: a nested gc=RULE cannot be combined with versions, ttl or gc=union|intersection; put every rule in the nested rule, e.g. gc=union(versions=3,age=7d)", f.Name)
	case nested:
		f.MaxVersions, f.TTL, f.GC = 0, 0, GCUnion
	case simple:
		f.GCRule = nil
	}
	return len(seen), nil
}

// splitTop splits s at the commas outside parentheses.
func splitTop(s string) ([]string, error) {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return nil, errors.New("a ')' has no matching '('")
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if depth != 0 {
		return nil, errors.New("a '(' is not closed")
	}
	return append(out, s[start:]), nil
}

func (f *Family) set(key, val string) error {
	var err error
	switch key {
	case "versions":
		n, perr := strconv.Atoi(val)
		if perr != nil {
			return cell.Invalidf("family %s: versions=%q is not a whole number; give 0 for no limit or N >= 1", f.Name, val)
		}
		f.MaxVersions = n
	case "ttl":
		f.TTL, err = parseDuration(val)
		if err != nil {
			return cell.Invalidf("family %s: ttl=%q: %v", f.Name, val, err)
		}
	case "gc":
		if strings.ContainsAny(val, "=()") {
			f.GCRule, err = ParseGCRule(val)
		} else {
			f.GC, err = ParseGCMode(val)
			if err != nil {
				err = cell.Invalidf("%v, nor a nested rule such as union(versions=3,age=7d)", strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": "))
			}
		}
	case "compression":
		f.Compression, err = ParseCompression(val)
	case "bloom":
		f.Bloom, err = ParseBloom(val)
	case "blocksize":
		f.BlockSize, err = parseSize(val)
		if err != nil {
			return cell.Invalidf("family %s: blocksize=%q: %v", f.Name, val, err)
		}
	case "inmemory":
		b, perr := strconv.ParseBool(val)
		if perr != nil {
			return cell.Invalidf("family %s: inmemory=%q is not true or false", f.Name, val)
		}
		f.InMemory = b
	case "type":
		f.ValueType, err = ParseValueType(val)
	default:
		return cell.Invalidf("family %s: unknown option %q; the options are %s", f.Name, key, validOptions)
	}
	if err != nil {
		return cell.Invalidf("family %s: %s", f.Name, strings.TrimPrefix(err.Error(), cell.ErrInvalid.Error()+": "))
	}
	return nil
}

// parseDuration parses a Go duration, whole days ("7d"), or "never".
func parseDuration(s string) (time.Duration, error) {
	if strings.EqualFold(s, "never") {
		return 0, nil
	}
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n < 0 || n > int64(1<<63-1)/int64(day) {
			return 0, errInvalidDuration
		}
		return time.Duration(n) * day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errInvalidDuration
	}
	return d, nil
}

var errInvalidDuration = errors.New(`not a duration; write e.g. "90m", "36h", "7d" or 0`)

// FormatDuration writes a TTL or a GC rule's age the way a user types it
// and parseDuration reads it back: in the largest one unit that is exact
// ("30d", "36h", "90m", "45s", "250ms"), else as Go prints durations
// ("1.5s"); 0 is "0".
func FormatDuration(d time.Duration) string {
	if d <= 0 {
		return d.String()
	}
	for _, u := range []struct {
		unit time.Duration
		name string
	}{{day, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if d%u.unit == 0 {
			return strconv.FormatInt(int64(d/u.unit), 10) + u.name
		}
	}
	return d.String()
}

// parseSize parses N, Nk or Nm (also kb, kib, mb, mib; any case) as bytes.
func parseSize(s string) (int, error) {
	lower := strings.ToLower(s)
	mult := int64(1)
	for _, suf := range []struct {
		s string
		m int64
	}{{"kib", 1 << 10}, {"kb", 1 << 10}, {"k", 1 << 10}, {"mib", 1 << 20}, {"mb", 1 << 20}, {"m", 1 << 20}} {
		if rest, ok := strings.CutSuffix(lower, suf.s); ok {
			lower, mult = rest, suf.m
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 || n > MaxBlockSize || n*mult > 1<<31-1 {
		return 0, errors.New("not a size from 1k to 4m; write e.g. 65536, 64k or 1m")
	}
	return int(n * mult), nil
}

func formatSize(n int) string {
	switch {
	case n > 0 && n%(1<<20) == 0:
		return strconv.Itoa(n>>20) + "m"
	case n > 0 && n%(1<<10) == 0:
		return strconv.Itoa(n>>10) + "k"
	}
	return strconv.Itoa(n)
}
