package sensors

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// TestNotSeenCheckerAndHeartbeatsAgreeOnDisk runs the not-seen checker
// while the beacons it is judging are heard again, through a real ingest
// pipeline and the real group-commit writer. Every beacon the checker
// opens is resolved by a heartbeat decided after it, so memory ends with
// nothing active, and the store must agree: a store that kept a condition
// active would bring it back on the next restart, with no heartbeat left
// to resolve it until the beacon is next heard, and listeners would have
// heard "resolved" before "active".
//
// It failed when the checker committed its transitions itself after
// releasing the asset locks: the heartbeats' resolutions, queued on the
// writer, were committed first and the checker's openings overwrote them.
//
// That needs a heartbeat to resolve a beacon the checker opened, and the
// resolution to be committed, while the check is still under way. Left to
// the scheduler it did not always happen: under load the gateways'
// heartbeats could all run before the checker judged anything, and it
// then opened nothing in any round. So each round arranges it. The
// gateways' heartbeats are held until the checker has judged its first
// beacon (late, as every beacon is after the clock step: it opens it).
// Half-way through the check, at a beacon of another shard, the checker
// hears that first beacon again itself (the hook is LastSeen, called
// under the judged beacon's shard lock) and waits for the writer to
// commit, then carries on. Around that, the heartbeats of both gateways
// race with the check as they come.
func TestNotSeenCheckerAndHeartbeatsAgreeOnDisk(t *testing.T) {
	const beacons = 240
	db := openDB(t)
	clk := clock.NewFake(time.Date(2026, 5, 1, 8, 0, 0, 0, time.UTC))
	svc, create := assetsWithLocation(t, db, clk)
	macs := make([]string, beacons)
	for i := range macs {
		macs[i] = fmt.Sprintf("C30000%06X", i+1)
		create(map[string]any{"mac": macs[i], "name": fmt.Sprintf("Panic %d", i), "type": "panic"})
	}

	w := store.NewWriter(db, store.WriterOptions{})
	t.Cleanup(func() { _ = w.Close() })
	p := ingest.New(ingest.Options{Registry: svc.Registry(), Writer: w, Clock: clk})
	m, err := NewMonitor(db, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Writer = w
	p.AddSubscriber(m)
	var mu sync.Mutex
	var heard []store.SensorConditionRecord
	m.Conds.Subscribe(func(r store.SensorConditionRecord) {
		mu.Lock()
		defer mu.Unlock()
		heard = append(heard, r)
	})

	// Heartbeats of the given beacons, 8 to a message.
	publish := func(gw string, macs []string) {
		for i := 0; i < len(macs); i += 8 {
			var reps []string
			for _, mac := range macs[i:min(i+8, len(macs))] {
				reps = append(reps, fmt.Sprintf(`{"mac":%q,"rssi":-60,"beacon_is_pushed":false,"motion":false}`, mac))
			}
			payload := []byte(`{"reports":[` + strings.Join(reps, ",") + `]}`)
			if err := p.HandlePublish(gw, "gw/"+gw+"/adv4", payload, 0); err != nil {
				t.Error(err)
			}
		}
	}
	heartbeats := func(gw string) { publish(gw, macs) }
	heartbeats("AC0000000001")

	// phases is what listeners heard of uid's not-seen since heard[from].
	phases := func(uid string, from int) []string {
		mu.Lock()
		defer mu.Unlock()
		var ps []string
		for _, r := range heard[from:] {
			if r.Kind == CondNotSeen && r.Subject == uid {
				ps = append(ps, r.Phase)
			}
		}
		return ps
	}
	lastSeen := p.LastSeen().Asset
	for round := range 6 {
		clk.Advance(NotSeenPanic + NotSeenEvery)
		mu.Lock()
		from := len(heard)
		mu.Unlock()

		// The hook; only the checker calls LastSeen, on its goroutine.
		start := make(chan struct{})
		release := sync.OnceFunc(func() { close(start) })
		var first string         // the first beacon judged, which the checker opens
		var heardAgain bool      // the checker has heard first again
		var firstPhases []string // what listeners had heard of first then
		judged := 0
		m.LastSeen = func(uid string) int64 {
			ts := lastSeen(uid) // for the first, read before the gateways are released
			judged++
			switch {
			case first == "":
				first = uid
				release()
			case !heardAgain && judged > beacons/2 && m.state.OfUID(uid) != m.state.OfUID(first):
				// first's shard lock is free: hear it again, as a
				// gateway would between two judgements, and have the
				// writer commit its opening and its resolution now.
				publish("AC0000000003", []string{m.beacons.Load().Get(assets.UIDHash(first), first).mac})
				if err := w.Flush(); err != nil {
					t.Error(err)
				}
				heardAgain, firstPhases = true, phases(first, from)
			}
			return ts
		}

		var wg sync.WaitGroup
		wg.Add(3)
		go func() {
			defer wg.Done()
			defer release() // should the checker judge nothing
			if err := m.CheckNotSeen(); err != nil {
				t.Error(err)
			}
		}()
		for _, gw := range []string{"AC0000000001", "AC0000000002"} {
			go func() {
				defer wg.Done()
				<-start
				heartbeats(gw)
			}()
		}
		wg.Wait()
		switch want := []string{store.HealthActive, store.HealthResolved}; {
		case !heardAgain:
			t.Fatalf("round %d: the checker judged %d beacons and the first, %q, was not heard again during the check: the race was not exercised",
				round, judged, first)
		case !slices.Equal(firstPhases, want):
			t.Fatalf("round %d: heard again during the check, the first beacon judged (%s) had been heard %q, want %q",
				round, first, firstPhases, want)
		}
		// The checker may have judged some beacons after both gateways'
		// heartbeats: those are missing now. One more heartbeat each,
		// after the checker, resolves them all.
		heartbeats("AC0000000001")
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got := m.Conds.Active(); len(got) != 0 {
			t.Fatalf("round %d: %d conditions active in memory after every beacon was heard", round, len(got))
		}
		onDisk, err := db.ActiveSensorConditions()
		if err != nil {
			t.Fatal(err)
		}
		if len(onDisk) != 0 {
			t.Fatalf("round %d: %d not-seen conditions active in the store, none in memory (first %s)", round, len(onDisk), onDisk[0].Key)
		}
	}

	// Listeners heard each beacon's transitions in the order they were
	// decided: they alternate, starting with active.
	mu.Lock()
	defer mu.Unlock()
	last := map[string]string{}
	opened := 0
	for _, r := range heard {
		want := store.HealthActive
		if last[r.Key] == store.HealthActive {
			want = store.HealthResolved
		}
		if r.Phase != want {
			t.Fatalf("%s: heard %s after %q", r.Key, r.Phase, last[r.Key])
		}
		last[r.Key] = r.Phase
		if r.Phase == store.HealthActive {
			opened++
		}
	}
	t.Logf("%d openings in 6 rounds", opened)
}

// TestMissingSetOfCollidingUIDs: the missing set is keyed by the uid's
// 32-bit hash; U412789 and U649192 share one, and each must still come
// and go on its own.
func TestMissingSetOfCollidingUIDs(t *testing.T) {
	const a, b = "U412789", "U649192"
	h := assets.UIDHash(a)
	if assets.UIDHash(b) != h {
		t.Fatal("the uids no longer collide: pick another pair")
	}
	m := &Monitor{}
	m.missing.Store(&missingSet{})
	m.setMissing(a, true)
	m.setMissing(b, true)
	m.setMissing(b, true) // twice: still once
	if s := *m.missing.Load(); !s.has(h, a) || !s.has(h, b) || s.len() != 2 {
		t.Fatalf("both missing: %v", s)
	}
	m.setMissing(a, false)
	if s := *m.missing.Load(); s.has(h, a) || !s.has(h, b) || s.len() != 1 {
		t.Fatalf("a back: %v", s)
	}
	m.setMissing(b, false)
	if s := *m.missing.Load(); len(s) != 0 {
		t.Fatalf("both back: %v", s)
	}
}

// TestStopWaitsForTheCheckUnderWay: at shutdown the monitor stops before
// the writer closes. A not-seen check still running when the writer
// closed would change memory and tell listeners of a transition the store
// never gets; after a restart it would be decided and pushed again.
func TestStopWaitsForTheCheckUnderWay(t *testing.T) {
	r := newCondRig(t)
	w := store.NewWriter(r.db, store.WriterOptions{})
	r.m.Writer = w
	r.feed(ingest.KindAdv4, "Panic", ingest.Report{})

	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	r.m.LastSeen = func(uid string) int64 {
		once.Do(func() { close(entered); <-release })
		v, _ := r.seen.Load(uid)
		ts, _ := v.(int64)
		return ts
	}
	go r.clk.Advance(NotSeenPanic + NotSeenEvery) // the timer's check runs here
	<-entered

	stopped := make(chan struct{})
	go func() {
		r.m.Stop()
		_ = w.Close() // what shutdown does next
		close(stopped)
	}()
	select {
	case <-stopped:
		close(release)
		t.Fatal("Stop returned while a check was under way")
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	select {
	case <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Stop did not return after the check finished")
	}
	onDisk, err := r.db.ActiveSensorConditions()
	if err != nil {
		t.Fatal(err)
	}
	inMemory := r.m.Conds.Active()
	if len(onDisk) != len(inMemory) {
		t.Fatalf("%d conditions active in the store, %d in memory", len(onDisk), len(inMemory))
	}
}
