// Package shuffle visits every integer of [0, n) exactly once in a
// random-looking order fixed by a seed, in constant memory: benchmarks
// that insert n keys in random order use it instead of rand.Perm, whose
// n-entry slice (32 MB at 4M keys) would sit in the measured process's
// heap and, doubled by the collector's headroom, in its peak RSS.
//
//	p := shuffle.New(count, seed)
//	for i := range count {
//		put(key(p.At(i)))
//	}
//
// The order is a keyed Feistel network (four rounds of a 64-bit mixer)
// on the smallest power of four at least n, walked in cycles until it
// lands inside [0, n): a permutation of that domain restricted to [0, n)
// is still a permutation, and fewer than four steps are needed on average
// because the domain is less than 4n.
package shuffle

import "math/bits"

// Perm is a permutation of [0, n). The zero value is not usable; use New.
type Perm struct {
	n    uint64
	half uint   // bits in each half of the Feistel domain
	mask uint64 // (1 << half) - 1
	keys [4]uint64
}

// New returns the permutation of [0, n) that seed selects. It panics if n
// is negative.
func New(n int, seed int64) *Perm {
	if n < 0 {
		panic("shuffle: negative count")
	}
	b := uint(bits.Len64(uint64(max(n-1, 1))))
	half := (b + 1) / 2
	p := &Perm{n: uint64(n), half: half, mask: 1<<half - 1}
	s := uint64(seed)
	for i := range p.keys {
		s += 0x9e3779b97f4a7c15
		p.keys[i] = mix(s)
	}
	return p
}

// Len returns n.
func (p *Perm) Len() int { return int(p.n) }

// At returns the i-th element of the permutation, i in [0, n).
func (p *Perm) At(i int) int {
	if i < 0 || uint64(i) >= p.n {
		panic("shuffle: index out of range")
	}
	x := uint64(i)
	for {
		x = p.encrypt(x)
		if x < p.n {
			return int(x)
		}
	}
}

// encrypt is a bijection of [0, 1<<(2*half)).
func (p *Perm) encrypt(x uint64) uint64 {
	l, r := x>>p.half, x&p.mask
	for _, k := range p.keys {
		l, r = r, l^(mix(r^k)&p.mask)
	}
	return l<<p.half | r
}

// mix is splitmix64's finalizer: every input bit flips about half the
// output bits.
func mix(z uint64) uint64 {
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}
