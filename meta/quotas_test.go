package meta

import (
	"context"
	"fmt"
	"testing"

	"github.com/tabuladb/tabula/meta/memstore"
)

func TestQuotaKeysRoundTrip(t *testing.T) {
	l := NewLayout("c")
	e := DecodeQuota(l, []byte(l.QuotaKey("namespace", "ns")), []byte(mustJSON(QuotaRecord{WriteBytes: 5, SpaceBytes: 9})), false)
	if e.Err != nil || e.Scope != "namespace" || e.Name != "ns" || e.IsUsage || e.Limits.WriteBytes != 5 || e.Limits.SpaceBytes != 9 {
		t.Fatalf("limits: %+v", e)
	}
	e = DecodeQuota(l, []byte(l.QuotaUsageKey("table", "ns:t")), []byte(mustJSON(UsageRecord{Bytes: 7, At: 1})), false)
	if e.Err != nil || e.Scope != "table" || e.Name != "ns:t" || !e.IsUsage || e.Usage.Bytes != 7 {
		t.Fatalf("usage: %+v", e)
	}
	e = DecodeQuota(l, []byte(l.QuotaKey("principal", "p")), nil, true)
	if e.Err != nil || !e.Deleted || e.Name != "p" {
		t.Fatalf("delete: %+v", e)
	}
	for _, k := range []string{l.QuotasPrefix() + "limits/table", l.QuotasPrefix() + "other/table/t", l.QuotasPrefix() + "limits//t"} {
		if e := DecodeQuota(l, []byte(k), []byte("{}"), false); e.Err == nil {
			t.Errorf("key %q decoded: %+v", k, e)
		}
	}
}

// FuzzDecodeQuota: any key and value decode to an entry or an error,
// never a panic; a decoded record re-encodes to the same record.
func FuzzDecodeQuota(f *testing.F) {
	l := NewLayout("")
	f.Add([]byte(l.QuotaKey("table", "t")), []byte(mustJSON(QuotaRecord{ReadRequests: 1.5, SpaceBytes: 10})))
	f.Add([]byte(l.QuotaUsageKey("namespace", "n")), []byte(`{"bytes":-1}`))
	f.Add([]byte("junk"), []byte(`{"read_requests":"x"}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		e := DecodeQuota(l, key, value, false)
		if e.Err != nil {
			return
		}
		if e.IsUsage {
			again := DecodeQuota(l, key, []byte(mustJSON(e.Usage)), false)
			if again.Err != nil || again.Usage != e.Usage {
				t.Fatalf("re-encoding %+v: %+v", e.Usage, again)
			}
			return
		}
		again := DecodeQuota(l, key, []byte(mustJSON(e.Limits)), false)
		if again.Err != nil || again.Limits != e.Limits {
			t.Fatalf("re-encoding %+v: %+v", e.Limits, again)
		}
	})
}

// CountDefaultNamespaceTablets counts the tablets of the tables named
// without a namespace as every tablet less each namespace's, across more
// namespaces than one transaction holds (CountKeys chunks them).
func TestCountDefaultNamespaceTablets(t *testing.T) {
	s := memstore.New(memstore.Options{Clock: memstore.NewManualClock()})
	defer s.Close()
	ctx := context.Background()
	l := NewLayout("c")
	put := func(k string) {
		if _, err := s.Put(ctx, k, "{}"); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 150 {
		ns := fmt.Sprintf("ns%03d", i)
		put(l.NamespaceKey(ns))
		put(l.TabletKey(ns+":t", "1"))
		put(l.TabletKey(ns+":t", "2"))
	}
	for i := range 7 {
		put(l.TabletKey(fmt.Sprintf("plain%d", i%3), fmt.Sprint(i)))
	}
	put(l.TabletKey("ns0", "1")) // a default table named like a namespace
	n, err := CountDefaultNamespaceTablets(ctx, s, l)
	if err != nil || n != 8 {
		t.Fatalf("CountDefaultNamespaceTablets = %d, %v; want 8", n, err)
	}
	counts, err := CountKeys(ctx, s, l.NamespaceTabletsPrefix("ns149"), l.TabletsPrefix("plain0"))
	if err != nil || len(counts) != 2 || counts[0] != 2 || counts[1] != 3 {
		t.Fatalf("CountKeys = %v, %v; want [2 3]", counts, err)
	}
}
