package client

import (
	"context"
	"time"

	"github.com/tabuladb/tabula/api/tabulapb"
)

// TopTablets is the answer of AdminClient.TopTablets.
type TopTablets struct {
	// At is when the leader collected the report (zero: none yet; the
	// leader collects one every load interval, 10s by default).
	At time.Time
	// Tablets are the hottest first, with their Load.
	Tablets []TabletInfo
	// Missing lists the servers that did not answer that round, as
	// "id: reason": their tablets are not in the report.
	Missing []string
}

// TopTablets returns the n hottest tablets (0: 20) of the leader's latest
// load report, by "requests" (reads and writes per second, the default),
// "size" or "bytes" (bytes read and written per second).
func (a *AdminClient) TopTablets(ctx context.Context, by string, n int) (TopTablets, error) {
	var resp *tabulapb.TopTabletsResponse
	err := a.call(ctx, func(ctx context.Context, m tabulapb.MasterClient) (err error) {
		resp, err = m.TopTablets(ctx, &tabulapb.TopTabletsRequest{By: by, Limit: int32(n)})
		return err
	})
	if err != nil {
		return TopTablets{}, err
	}
	out := TopTablets{Tablets: tabletInfos(resp.GetTablets()), Missing: resp.GetMissingServers()}
	if us := resp.GetReportTimeMicros(); us != 0 {
		out.At = time.UnixMicro(us)
	}
	return out, nil
}
