package master

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/tabuladb/tabula/api/tabulapb"
	"github.com/tabuladb/tabula/internal/testkit"
)

// testClock is the masters' clock in the backup schedule tests: rounds
// are driven by hand at the times the test sets, never by wall time.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) set(t time.Time) { c.mu.Lock(); c.t = t; c.mu.Unlock() }

// locationWorld is the backups at the locations, as the backup package
// keeps them, shared by every master of a test: CreateBackup completes an
// unfinished backup of the table instead of starting another (as
// backup.Create does), and returns a complete one started since a
// claim. It records every call.
type locationWorld struct {
	mu    sync.Mutex
	clock *testClock
	// complete and unfinished backups by location; started times by name.
	complete   map[string][]string
	unfinished map[string]string // location+table -> name
	started    map[string]time.Time
	creates    []string // "table@location since=..." per call
	deleted    []string
	fail       error
	// hold, when set, makes the next CreateBackup start its backup, send
	// on it and wait for its context to end (a term ending mid-run);
	// holdDone the same after completing the backup, then reporting
	// success (a term ending before the run's outcome is recorded).
	hold, holdDone chan struct{}
}

func newLocationWorld(clock *testClock) *locationWorld {
	return &locationWorld{clock: clock, complete: map[string][]string{}, unfinished: map[string]string{}, started: map[string]time.Time{}}
}

func (w *locationWorld) CreateBackup(ctx context.Context, table, location string, since time.Time, _ BackupSnapshots) (string, error) {
	w.mu.Lock()
	w.creates = append(w.creates, fmt.Sprintf("%s@%s since=%v", table, location, !since.IsZero()))
	if w.fail != nil {
		defer w.mu.Unlock()
		return "", w.fail
	}
	if !since.IsZero() {
		for _, n := range w.complete[location] {
			if !w.started[n].Before(since) {
				w.mu.Unlock()
				return n, nil
			}
		}
	}
	name, ok := w.unfinished[location+table]
	if !ok {
		name = table + "." + w.clock.now().UTC().Format("0102T1504")
		w.started[name] = w.clock.now()
		w.unfinished[location+table] = name
	}
	hold, holdDone := w.hold, w.holdDone
	w.hold, w.holdDone = nil, nil
	w.mu.Unlock()
	if hold != nil {
		hold <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	}
	w.mu.Lock()
	delete(w.unfinished, location+table)
	w.complete[location] = append(w.complete[location], name)
	w.mu.Unlock()
	if holdDone != nil {
		holdDone <- struct{}{}
		<-ctx.Done()
	}
	return name, nil
}

func (w *locationWorld) DeleteBackup(_ context.Context, location, name string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deleted = append(w.deleted, name)
	w.complete[location] = slices.DeleteFunc(w.complete[location], func(n string) bool { return n == name })
	return nil
}

func (w *locationWorld) state() (creates, complete, deleted []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.creates), slices.Clone(w.complete["/backups"]), slices.Clone(w.deleted)
}

// scheduleRound runs one round of m's backup schedules at the clock's time.
func scheduleRound(t *testing.T, m *Master) {
	t.Helper()
	term, err := m.lead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := m.runBackupSchedules(context.Background(), term); err != nil {
		t.Fatal(err)
	}
}

func listSchedules(t *testing.T, c tabulapb.BackupSchedulesClient) []*tabulapb.BackupSchedule {
	t.Helper()
	resp, err := c.ListBackupSchedules(context.Background(), &tabulapb.ListBackupSchedulesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	return resp.GetSchedules()
}

// startScheduleCluster starts two masters on one clock and one world of
// backup locations, with table t, and returns the leader first.
func startScheduleCluster(t *testing.T, clock *testClock, w *locationWorld) (*cluster, *Master, *Master) {
	c := newCluster(t)
	opts := Options{BackupRunner: w, BackupScheduleInterval: -1, now: clock.now}
	m1, m2 := c.startMaster(opts), c.startMaster(opts)
	c.startServer("s1")
	leader := c.waitLeader(m1, m2)
	other := m1
	if leader == m1 {
		other = m2
	}
	if _, err := c.dial(leader.Addr()).CreateTable(context.Background(), &tabulapb.CreateTableRequest{Schema: schema("t", "cf")}); err != nil {
		t.Fatal(err)
	}
	return c, leader, other
}

// TestBackupScheduleRunsEachSlotOnceAcrossFailover drives the clock
// through several periods of a schedule (every 1h, keep 3h), with the
// leader's term ending in the middle of a run: each due slot makes exactly
// one backup, the new leader completes the interrupted one (no slot lost,
// none made twice), missed slots collapse into one run, and the
// schedule's backups older than keep are deleted, never another backup
// at the location (docs/CONTRACTS.md §7).
func TestBackupScheduleRunsEachSlotOnceAcrossFailover(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &testClock{t: t0}
	w := newLocationWorld(clock)
	w.complete["/backups"] = []string{"manual"} // made by hand: never expired by the schedule
	w.started["manual"] = t0.Add(-48 * time.Hour)
	c, leader, other := startScheduleCluster(t, clock, w)
	sc := tabulapb.NewBackupSchedulesClient(c.conn(leader.Addr()))
	if _, err := sc.SetBackupSchedule(context.Background(), &tabulapb.SetBackupScheduleRequest{
		Table: "t", Location: "/backups", EverySeconds: 3600, KeepSeconds: 3 * 3600}); err != nil {
		t.Fatal(err)
	}
	at := func(d time.Duration) { clock.set(t0.Add(d)) }

	wantComplete := func(step string, want ...string) {
		t.Helper()
		_, got, _ := w.state()
		if !slices.Equal(got, want) {
			t.Fatalf("%s: backups at the location %v, want %v", step, got, want)
		}
	}
	scheduleRound(t, leader) // slot 0 is due at once
	scheduleRound(t, leader) // and done: nothing
	at(30 * time.Minute)
	scheduleRound(t, leader)
	wantComplete("first period", "manual", "t.0101T0000")
	at(time.Hour)
	scheduleRound(t, leader)
	at(2*time.Hour + 59*time.Minute)
	scheduleRound(t, leader)
	wantComplete("three slots", "manual", "t.0101T0000", "t.0101T0100", "t.0101T0259")

	// Slot 3h: the leader's term ends while its backup runs.
	at(3*time.Hour + time.Minute)
	held := make(chan struct{})
	w.mu.Lock()
	w.hold = held
	w.mu.Unlock()
	endTermDuring(t, leader, held)
	wantComplete("interrupted", "manual", "t.0101T0000", "t.0101T0100", "t.0101T0259")
	third := c.startMaster(Options{BackupRunner: w, BackupScheduleInterval: -1, now: clock.now})
	leader = c.waitLeader(other)
	sc = tabulapb.NewBackupSchedulesClient(c.conn(leader.Addr()))
	if s := listSchedules(t, sc)[0]; !s.GetRunning() {
		t.Fatalf("after the term ended mid-run the schedule is %v; want its slot still claimed", s)
	}
	at(3*time.Hour + 2*time.Minute)
	scheduleRound(t, leader) // completes the interrupted backup (started at 3:01), expires 0:00
	scheduleRound(t, leader)
	wantComplete("after failover", "manual", "t.0101T0100", "t.0101T0259", "t.0101T0301")

	// No master runs through slots 4h and 5h: one run catches up.
	at(5*time.Hour + 30*time.Minute)
	scheduleRound(t, leader)
	scheduleRound(t, leader)
	wantComplete("caught up", "manual", "t.0101T0259", "t.0101T0301", "t.0101T0530")
	at(6 * time.Hour) // 2:59's backup is 3h old
	scheduleRound(t, leader)
	wantComplete("slot 6h", "manual", "t.0101T0301", "t.0101T0530", "t.0101T0600")

	// Slot 7h: the backup completes, then the term ends before its outcome
	// is recorded; the next leader finds that backup and records it
	// instead of making a second one.
	at(7 * time.Hour)
	held = make(chan struct{})
	w.mu.Lock()
	w.holdDone = held
	w.mu.Unlock()
	endTermDuring(t, leader, held)
	leader = c.waitLeader(third)
	sc = tabulapb.NewBackupSchedulesClient(c.conn(leader.Addr()))
	at(7*time.Hour + time.Minute)
	scheduleRound(t, leader)
	scheduleRound(t, leader)
	wantComplete("slot 7h after failover", "manual", "t.0101T0530", "t.0101T0600", "t.0101T0700")

	creates, _, deleted := w.state()
	wantCreates := []string{"t@/backups since=false", "t@/backups since=false", "t@/backups since=false",
		"t@/backups since=false", "t@/backups since=true", "t@/backups since=false", "t@/backups since=false",
		"t@/backups since=false", "t@/backups since=true"}
	if !slices.Equal(creates, wantCreates) {
		t.Errorf("runs %q, want %q", creates, wantCreates)
	}
	if want := []string{"t.0101T0000", "t.0101T0100", "t.0101T0259", "t.0101T0301"}; !slices.Equal(deleted, want) {
		t.Errorf("deleted %v, want %v", deleted, want)
	}
	s := listSchedules(t, sc)[0]
	if s.GetLastBackup() != "t.0101T0700" || s.GetRunning() || s.GetFailures() != 0 ||
		!slices.Equal(s.GetBackups(), []string{"t.0101T0530", "t.0101T0600", "t.0101T0700"}) ||
		s.GetNextDue() != t0.Add(8*time.Hour).UnixMicro() {
		t.Errorf("schedule after the runs: %v", s)
	}
}

// endTermDuring runs a round on leader and closes it once the runner
// sends on held (inside a run), then waits for the round to return.
func endTermDuring(t *testing.T, leader *Master, held chan struct{}) {
	t.Helper()
	term, err := leader.lead(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = leader.runBackupSchedules(context.Background(), term)
	}()
	<-held
	leader.Close()
	<-done
}

// TestFailedScheduledBackupIsReportedAndRetried: a failing run shows its
// error in the list and is retried at later rounds with a doubling wait,
// not at every round; a success clears the count (docs/CONTRACTS.md §7).
func TestFailedScheduledBackupIsReportedAndRetried(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &testClock{t: t0}
	w := newLocationWorld(clock)
	w.fail = errors.New("s3: 403 Forbidden")
	c, leader, _ := startScheduleCluster(t, clock, w)
	sc := tabulapb.NewBackupSchedulesClient(c.conn(leader.Addr()))
	if _, err := sc.SetBackupSchedule(context.Background(), &tabulapb.SetBackupScheduleRequest{
		Table: "t", Location: "s3://bucket/b", EverySeconds: 86400, KeepSeconds: 7 * 86400}); err != nil {
		t.Fatal(err)
	}
	runs := func() int { cr, _, _ := w.state(); return len(cr) }
	scheduleRound(t, leader)
	s := listSchedules(t, sc)[0]
	if s.GetFailures() != 1 || s.GetLastError() != "s3: 403 Forbidden" || s.GetLastFailure() != t0.UnixMicro() ||
		s.GetRetryAt() != t0.Add(time.Minute).UnixMicro() || s.GetNextDue() != s.GetRetryAt() || s.GetLastSuccess() != 0 {
		t.Fatalf("after a failed run: %v", s)
	}
	clock.set(t0.Add(59 * time.Second))
	scheduleRound(t, leader)
	if runs() != 1 {
		t.Fatalf("%d runs before the retry time, want 1", runs())
	}
	clock.set(t0.Add(time.Minute))
	scheduleRound(t, leader)
	if s := listSchedules(t, sc)[0]; runs() != 2 || s.GetFailures() != 2 || s.GetRetryAt() != t0.Add(3*time.Minute).UnixMicro() {
		t.Fatalf("after the second failure (%d runs): %v", runs(), s)
	}
	w.mu.Lock()
	w.fail = nil
	w.mu.Unlock()
	clock.set(t0.Add(2 * time.Minute))
	scheduleRound(t, leader)
	if runs() != 2 {
		t.Fatalf("%d runs before the doubled wait, want 2", runs())
	}
	clock.set(t0.Add(3 * time.Minute))
	scheduleRound(t, leader)
	scheduleRound(t, leader)
	s = listSchedules(t, sc)[0]
	if runs() != 3 || s.GetFailures() != 0 || s.GetLastSuccess() != t0.Add(3*time.Minute).UnixMicro() ||
		s.GetLastBackup() != "t.0101T0003" || s.GetLastError() == "" || s.GetNextDue() != t0.Add(24*time.Hour).UnixMicro() {
		t.Fatalf("after the retry succeeded (%d runs): %v", runs(), s)
	}
}

// TestBackupScheduleRefusesBadPolicies: each refusal names the fix.
func TestBackupScheduleRefusesBadPolicies(t *testing.T) {
	clock := &testClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c, leader, other := startScheduleCluster(t, clock, newLocationWorld(clock))
	sc := tabulapb.NewBackupSchedulesClient(c.conn(leader.Addr()))
	ctx := context.Background()
	for _, tc := range []struct {
		req  *tabulapb.SetBackupScheduleRequest
		code codes.Code
		want string
	}{
		{&tabulapb.SetBackupScheduleRequest{Table: "t", Location: "b", EverySeconds: 3600, KeepSeconds: 3600}, codes.InvalidArgument, "give an absolute path"},
		{&tabulapb.SetBackupScheduleRequest{Table: "t", EverySeconds: 3600, KeepSeconds: 3600}, codes.InvalidArgument, "give --to"},
		{&tabulapb.SetBackupScheduleRequest{Table: "t", Location: "gs://x", EverySeconds: 3600, KeepSeconds: 3600}, codes.InvalidArgument, "only local paths and s3://"},
		{&tabulapb.SetBackupScheduleRequest{Table: "t", Location: "/b", EverySeconds: 10, KeepSeconds: 3600}, codes.InvalidArgument, "below the minimum 1m0s"},
		{&tabulapb.SetBackupScheduleRequest{Table: "t", Location: "/b", EverySeconds: 7200, KeepSeconds: 3600}, codes.InvalidArgument, "give --keep of at least 2h0m0s"},
		{&tabulapb.SetBackupScheduleRequest{Table: "nosuch", Location: "/b", EverySeconds: 3600, KeepSeconds: 3600}, codes.NotFound, "table nosuch does not exist"},
	} {
		_, err := sc.SetBackupSchedule(ctx, tc.req)
		testkit.WantCode(t, fmt.Sprint(tc.req), err, tc.code, tc.want)
	}
	_, err := sc.DeleteBackupSchedule(ctx, &tabulapb.DeleteBackupScheduleRequest{Table: "t"})
	testkit.WantCode(t, "delete", err, codes.NotFound, "`tabula backup schedule list` lists them")
	_, err = tabulapb.NewBackupSchedulesClient(c.conn(other.Addr())).SetBackupSchedule(ctx,
		&tabulapb.SetBackupScheduleRequest{Table: "t", Location: "/b", EverySeconds: 3600, KeepSeconds: 3600})
	testkit.WantCode(t, "on the standby", err, codes.Unavailable, "not the leader")
}
