package verify

import (
	"strings"
	"testing"
	"time"
)

// TestFenceJudgesOnlyProbesSentAfterTheLeaseWasGone: an acknowledgement
// counts against the server only for a probe sent after the watch saw its
// lease gone; one sent before (answered late or not) is allowed, and
// without a lease seen gone the check is inconclusive, not passed.
func TestFenceJudgesOnlyProbesSentAfterTheLeaseWasGone(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	probes := []probe{
		{at: at(-50), acked: true},   // before the cut
		{at: at(-25), acked: true},   // before the cut
		{at: at(900), acked: true},   // cut off, still within its lease bound
		{at: at(1500), acked: false}, // fenced
		{at: at(2100), acked: false}, // after the lease was gone: refused
		{at: at(2125), acked: true},  // after the lease was gone: acknowledged
		{at: at(2150), acked: false},
	}
	cases := []struct {
		name      string
		leaseGone time.Time
		want      FenceCheck
		verdict   string
	}{
		{"lease gone at 2s", at(2000),
			FenceCheck{LeaseGone: 2 * time.Second, AckedBeforeCut: 2, LastAck: 2125 * time.Millisecond, After: 3, LateAcks: 1},
			"VIOLATION"},
		{"lease gone after the last probe", at(2200),
			FenceCheck{LeaseGone: 2200 * time.Millisecond, AckedBeforeCut: 2, LastAck: 2125 * time.Millisecond},
			"0 probes after that, 0 acknowledged: ok"},
		{"lease never seen gone", time.Time{},
			FenceCheck{LeaseGone: -1, AckedBeforeCut: 2, LastAck: 2125 * time.Millisecond},
			"inconclusive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := judgeFence(FenceCheck{}, probes, t0, c.leaseGone)
			if got != c.want {
				t.Errorf("judgeFence = %+v, want %+v", got, c.want)
			}
			if s := got.String(); !strings.Contains(s, c.verdict) {
				t.Errorf("String() = %q, want it to say %q", s, c.verdict)
			}
		})
	}
	if !(&FenceCheck{LeaseGone: time.Second, After: 1}).Conclusive() || (&FenceCheck{LeaseGone: time.Second}).Conclusive() {
		t.Error("Conclusive wants the lease seen gone and a probe sent after")
	}
}
