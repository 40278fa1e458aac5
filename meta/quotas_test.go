package meta

import (
	"testing"
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
