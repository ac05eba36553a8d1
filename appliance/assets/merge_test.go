package assets

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func TestMergeExclusiveWindowsPlanEqualsApply(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("fridge"), Type: sp("sensor"), LocationID: up(h)})
	var src []BeaconView
	for _, mac := range []string{"C3000000000B", "C3000000000C", "C3000000000D", "C3000000000E"} {
		src = append(src, e.beacon(BeaconInput{MAC: sp(mac), Name: sp(mac)}))
	}
	e.clock.Advance(time.Hour)
	e.readings(surv.AssetUID, 100, 200, 300)
	e.readings(src[0].AssetUID, 50, 250, 300, 350, 400) // overlaps the survivor up to 300
	e.readings(src[1].AssetUID, 10, 20)                 // entirely older: dropped, and no lowering of the mark
	e.readings(src[2].AssetUID, 390, 410, 420)          // window opens after src[0]'s last (400)
	// src[3] has no readings but is the newest device.
	ids := MergeInput{SourceIDs: []uint64{src[0].ID, src[1].ID, src[2].ID, src[3].ID}}

	plan, err := e.svc.PlanMerge(surv.AssetUID, ids)
	if err != nil {
		t.Fatal(err)
	}
	type win struct {
		after, until  *int64
		kept, dropped int
	}
	want := []win{{ip(300), ip(400), 2, 3}, {ip(400), ip(20), 0, 2}, {ip(400), ip(420), 2, 1}, {ip(420), nil, 0, 0}}
	for i, w := range want {
		s := plan.Sources[i]
		if !reflect.DeepEqual(s.After, w.after) || !reflect.DeepEqual(s.Until, w.until) || s.Kept != w.kept || s.Dropped != w.dropped {
			t.Errorf("source %d window = after %v until %v kept %d dropped %d; want %+v", i, deref(s.After), deref(s.Until), s.Kept, s.Dropped, w)
		}
	}
	if plan.SurvivorReadings != 3 || plan.Kept != 4 || plan.Dropped != 6 || plan.DeviceAfter != "C3000000000E" {
		t.Errorf("plan = %+v", plan)
	}
	if got := e.history(src[0].AssetUID); len(got) != 5 {
		t.Fatalf("plan wrote: %v", got)
	}

	done, err := e.svc.Merge(surv.AssetUID, ids)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(plan, done) {
		t.Errorf("plan != apply:\n%+v\n%+v", plan, done)
	}
	if got, want := e.history(surv.AssetUID), []int64{100, 200, 300, 350, 400, 410, 420}; !reflect.DeepEqual(got, want) {
		t.Errorf("survivor history = %v, want %v", got, want)
	}
	for _, s := range src {
		if got := e.history(s.AssetUID); len(got) != 0 {
			t.Errorf("%s keeps %v", s.AssetUID, got)
		}
		v, _ := e.svc.Beacon(s.AssetUID)
		if v.Active || v.Status != store.AssetMerged || v.MergedInto != surv.ID || v.MAC != "" {
			t.Errorf("source after merge = %+v", v)
		}
	}
	e.resolves("C3000000000E", surv.AssetUID)
	for _, mac := range []string{"C3000000000A", "C3000000000B", "C3000000000C", "C3000000000D"} {
		e.resolves(mac, "")
	}
	as, _ := e.svc.Assignments(store.KindBeacon, surv.AssetUID)
	open := 0
	for _, a := range as {
		if a.Open {
			open++
			if a.MAC != "C3000000000E" {
				t.Errorf("open assignment %+v", a)
			}
		}
	}
	if len(as) != 5 || open != 1 {
		t.Errorf("assignments = %+v", as)
	}
	if ds, _ := e.svc.Devices(DeviceFilter{Status: store.DeviceAvailable}); len(ds) != 4 {
		t.Errorf("available = %+v", ds)
	}
	// Irreversible: the sources are gone from service.
	_, err = e.svc.Merge(surv.AssetUID, ids)
	wantField(t, err, "source_ids")
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestMergeValidation(t *testing.T) {
	e := newEnv(t)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("s")})
	src := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("b")})
	e.readings(src.AssetUID, 1, 2)
	for name, ids := range map[string][]uint64{
		"empty":     {},
		"survivor":  {surv.ID},
		"duplicate": {src.ID, src.ID},
		"unknown":   {src.ID, 99},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: ids})
			wantField(t, err, "source_ids")
			if got := e.history(src.AssetUID); len(got) != 2 {
				t.Errorf("refused merge wrote: %v", got)
			}
			e.resolves("C3000000000B", src.AssetUID)
		})
	}
	// Survivor without readings: the first source keeps everything.
	p, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{src.ID}})
	if err != nil || p.Sources[0].After != nil || p.Sources[0].Kept != 2 || p.DeviceAfter != "C3000000000B" {
		t.Errorf("merge = %+v %v", p, err)
	}
	e.resolves("C3000000000A", "")
}

// lateWriter stands in for the group-commit writer: each Flush commits
// the ops queued before it; queue adds ops the next Flush commits.
type lateWriter struct {
	db      *store.DB
	pending []func(*bolt.Tx) error
	flushes int
	// before, when set, queues its ops only after the first Flush: a
	// report resolved against the registry before the merge's reload
	// whose write reaches the writer after the merge's own flush.
	before []func(*bolt.Tx) error
}

func (w *lateWriter) Flush() error {
	w.flushes++
	for _, op := range w.pending {
		if err := w.db.Update(op); err != nil {
			return err
		}
	}
	w.pending, w.before = w.before, nil
	return nil
}

// TestMergeWindowsHoldForWritesInFlight: a source's zone writes queued
// around a merge keep the merge's exclusive windows. Queued before it,
// the merge's flush commits them first (a close queued behind the merge
// landed under the old uid and left the stay open for good); queued
// after its flush, the uid sweep moves them with the same windows (it
// moved them plainly, and the survivor was in two zones at once). A
// review found both.
func TestMergeWindowsHoldForWritesInFlight(t *testing.T) {
	for _, late := range []bool{false, true} {
		e := newEnv(t)
		h := e.loc("Hospital", "H1", 0)
		surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("watch"), Type: sp("watch"), LocationID: up(h)})
		src := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("spare"), Type: sp("watch"), LocationID: up(h)})
		if err := e.db.Update(func(tx *bolt.Tx) error {
			if err := store.AppendZoneInterval(tx, surv.AssetUID, &store.ZoneInterval{ZoneID: 1, Zone: "Room A", Enter: 1000}); err != nil {
				return err
			}
			return store.AppendZoneInterval(tx, src.AssetUID, &store.ZoneInterval{ZoneID: 2, Zone: "Room B", Enter: 1000})
		}); err != nil {
			t.Fatal(err)
		}
		old := src.AssetUID
		ops := []func(*bolt.Tx) error{ // the source leaves Room B for Room C at 5000
			func(tx *bolt.Tx) error { return store.CloseZoneIntervalEntered(tx, old, 1000, 5000) },
			func(tx *bolt.Tx) error {
				return store.AppendZoneInterval(tx, old, &store.ZoneInterval{ZoneID: 3, Zone: "Room C", Enter: 5000})
			},
		}
		w := &lateWriter{db: e.db}
		if late {
			w.before = ops
		} else {
			w.pending = ops
		}
		e.svc.Connect(IngestHooks{LastSeen: e.mem, Recorder: e.mem, Discovery: e.disc, Writer: w})
		if _, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{src.ID}}); err != nil {
			t.Fatal(err)
		}
		if w.flushes < 2 {
			t.Fatalf("late %v: %d flushes, want the merge's and the sweep's", late, w.flushes)
		}
		ivs, _, err := e.db.ZoneIntervals(surv.AssetUID, store.ZoneCursor{}, 20)
		if err != nil {
			t.Fatal(err)
		}
		// The survivor is still in Room A (open): none of the source's
		// stays, which all began while it was, may be in its history.
		if len(ivs) != 1 || ivs[0].Zone != "Room A" {
			t.Errorf("late %v: the survivor's history after the merge: %+v", late, ivs)
		}
	}
}

// TestMergeCommitsQueuedClosesFirst: a source stay the merge keeps (it
// began after the survivor's last ended) whose close was queued just
// before the merge is closed: committed after the merge, the close
// landed under the old uid, found nothing, and the stay stayed open in
// the survivor's history for good (a review).
//
// A close queued after the merge's flush and before the registry's
// reload is still lost (closing note of 2026-11-27): moving the kept
// stays after that, with the uid sweep, put them at risk of a crash
// between the two, and following the alias in the store's close took
// another stay that began in the same millisecond.
func TestMergeCommitsQueuedClosesFirst(t *testing.T) {
	mergeWithQueuedClose(t, false)
}

func mergeWithQueuedClose(t *testing.T, late bool) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("watch"), Type: sp("watch"), LocationID: up(h)})
	src := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("spare"), Type: sp("watch"), LocationID: up(h)})
	if err := e.db.Update(func(tx *bolt.Tx) error {
		if err := store.AppendZoneInterval(tx, surv.AssetUID, &store.ZoneInterval{ZoneID: 1, Zone: "Room A", Enter: 100, Leave: 500}); err != nil {
			return err
		}
		return store.AppendZoneInterval(tx, src.AssetUID, &store.ZoneInterval{ZoneID: 2, Zone: "Room B", Enter: 1000})
	}); err != nil {
		t.Fatal(err)
	}
	old := src.AssetUID
	ops := []func(*bolt.Tx) error{
		func(tx *bolt.Tx) error { return store.CloseZoneIntervalEntered(tx, old, 1000, 5000) },
	}
	w := &lateWriter{db: e.db, pending: ops}
	if late {
		w.pending, w.before = nil, ops
	}
	e.svc.Connect(IngestHooks{LastSeen: e.mem, Recorder: e.mem, Discovery: e.disc, Writer: w})
	if _, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{src.ID}}); err != nil {
		t.Fatal(err)
	}
	ivs, _, _ := e.db.ZoneIntervals(surv.AssetUID, store.ZoneCursor{}, 20)
	if len(ivs) != 2 || ivs[0].Zone != "Room B" || ivs[0].Leave != 5000 || ivs[1].Leave != 500 {
		t.Fatalf("late %v: the survivor's history after the merge: %+v", late, ivs)
	}
}

// TestMergePlanCountsDroppedStays: the plan says how many zone stays
// each source loses to the windows (the merge cannot be undone), as
// apply then drops them; a second source is judged against the first's
// stays kept.
func TestMergePlanCountsDroppedStays(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("watch"), Type: sp("watch"), LocationID: up(h)})
	s1 := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("one"), Type: sp("watch"), LocationID: up(h)})
	s2 := e.beacon(BeaconInput{MAC: sp("C3000000000C"), Name: sp("two"), Type: sp("watch"), LocationID: up(h)})
	stays := map[string][][2]int64{
		surv.AssetUID: {{100, 200}},
		s1.AssetUID:   {{50, 90}, {150, 300}, {400, 500}}, // two begin before 200: dropped
		s2.AssetUID:   {{450, 460}, {600, 0}},             // 450 < 500 (s1's kept): dropped
	}
	if err := e.db.Update(func(tx *bolt.Tx) error {
		for uid, ss := range stays {
			for _, s := range ss {
				if err := store.AppendZoneInterval(tx, uid, &store.ZoneInterval{ZoneID: 1, Zone: "Z", Enter: s[0], Leave: s[1]}); err != nil {
					return err
				}
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	in := MergeInput{SourceIDs: []uint64{s1.ID, s2.ID}}
	plan, err := e.svc.PlanMerge(surv.AssetUID, in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.StaysDropped != 3 || plan.Sources[0].StaysDropped != 2 || plan.Sources[1].StaysDropped != 1 {
		t.Fatalf("plan: %d stays dropped, by source %d and %d", plan.StaysDropped, plan.Sources[0].StaysDropped, plan.Sources[1].StaysDropped)
	}
	if _, err := e.svc.Merge(surv.AssetUID, in); err != nil {
		t.Fatal(err)
	}
	ivs, _, _ := e.db.ZoneIntervals(surv.AssetUID, store.ZoneCursor{}, 20)
	var enters []int64
	for _, iv := range ivs {
		enters = append(enters, iv.Enter)
	}
	if !reflect.DeepEqual(enters, []int64{600, 400, 100}) {
		t.Fatalf("stays after the merge enter at %v", enters)
	}
}

// TestRemintSweepKeepsMergeWindows: remint apply's sweep of every former
// uid moves a merged source's stragglers (zone stays written under its
// uid after the merge) with the merge's windows: one that began while
// the survivor was still in its stay is dropped, not moved into two
// zones at once.
func TestRemintSweepKeepsMergeWindows(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("watch"), Type: sp("watch"), LocationID: up(h)})
	src := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("spare"), Type: sp("watch"), LocationID: up(h)})
	if err := e.db.Update(func(tx *bolt.Tx) error {
		return store.AppendZoneInterval(tx, surv.AssetUID, &store.ZoneInterval{ZoneID: 1, Zone: "Room A", Enter: 1000})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{src.ID}}); err != nil {
		t.Fatal(err)
	}
	if err := e.db.Update(func(tx *bolt.Tx) error { // a straggler under the source's uid
		return store.AppendZoneInterval(tx, src.AssetUID, &store.ZoneInterval{ZoneID: 2, Zone: "Room B", Enter: 2000})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.RemintApply(); err != nil {
		t.Fatal(err)
	}
	ivs, _, _ := e.db.ZoneIntervals(surv.AssetUID, store.ZoneCursor{}, 20)
	if len(ivs) != 1 || ivs[0].Zone != "Room A" {
		t.Fatalf("the survivor's history after remint's sweep: %+v", ivs)
	}
	if left, _, _ := e.db.ZoneIntervals(src.AssetUID, store.ZoneCursor{}, 20); len(left) != 0 {
		t.Fatalf("left under the merged source: %+v", left)
	}
}

// mergeFollower records the MergeRename calls a merge makes.
type mergeFollower struct{ calls []string }

func (f *mergeFollower) Rename(o, n string) { f.calls = append(f.calls, "rename "+o+" "+n) }
func (f *mergeFollower) MergeRename(o, n string, device bool) {
	f.calls = append(f.calls, fmt.Sprintf("merge %s %s %v", o, n, device))
}

// TestMergeTellsWhoseDeviceMoved: the tracking engine must know when the
// survivor took a source's device, since its own live state then
// belongs to the tag the merge detached: only the last source's device
// moves (plan.DeviceAfter).
func TestMergeTellsWhoseDeviceMoved(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	surv := e.beacon(BeaconInput{MAC: sp("C3000000000A"), Name: sp("watch"), Type: sp("watch"), LocationID: up(h)})
	a := e.beacon(BeaconInput{MAC: sp("C3000000000B"), Name: sp("old tag"), Type: sp("watch"), LocationID: up(h)})
	b := e.beacon(BeaconInput{MAC: sp("C3000000000C"), Name: sp("new tag"), Type: sp("watch"), LocationID: up(h)})
	f := &mergeFollower{}
	e.svc.Connect(IngestHooks{LastSeen: e.mem, Recorder: e.mem, Discovery: e.disc, Followers: []Renamer{f}})
	plan, err := e.svc.Merge(surv.AssetUID, MergeInput{SourceIDs: []uint64{a.ID, b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"merge " + a.AssetUID + " " + surv.AssetUID + " false", "merge " + b.AssetUID + " " + surv.AssetUID + " true"}
	if plan.DeviceAfter != "C3000000000C" || !reflect.DeepEqual(f.calls, want) {
		t.Fatalf("device after %s, calls %q, want %q", plan.DeviceAfter, f.calls, want)
	}
}
