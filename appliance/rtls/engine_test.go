package rtls_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/assets"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/rtls"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

// rig is the real data path: bbolt in a temp dir, the group-commit
// writer, the registry, the ingest pipeline and the engine subscribed.
type rig struct {
	t   *testing.T
	db  *store.DB
	w   *store.Writer
	reg *assets.Registry
	p   *ingest.Pipeline
	e   *rtls.Engine
	clk *clock.Fake
}

const (
	gwA = "AC233FA00001" // placed in zone 1
	gwB = "AC233FA00002" // placed in zone 2
)

func newRig(t *testing.T) *rig { t.Helper(); return newRigParams(t, rtls.Params{}) }

// newRigParams is newRig with the algorithms' parameters p.
func newRigParams(t *testing.T, p rtls.Params) *rig {
	t.Helper()
	return newRigOptions(t, rtls.Options{Params: p})
}

// newRigOptions is newRig with the engine's options o (its clock,
// writer and timeout are the rig's).
func newRigOptions(t *testing.T, o rtls.Options) *rig {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "t.db"), store.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{t: t, db: db, clk: clock.NewFake(t0)}
	r.w = store.NewWriter(db, store.WriterOptions{})
	for i, mac := range []string{"C30000000001", "C30000000002"} {
		if err := db.CreateBeacon(&store.Beacon{AssetUID: fmt.Sprintf("WAT-%d", i+1), MAC: mac, Name: "w", Type: "watch", Active: true}); err != nil {
			t.Fatal(err)
		}
	}
	for _, mac := range []string{gwA, gwB} {
		if err := db.CreateGateway(&store.Gateway{AssetUID: "GW-" + mac, MAC: mac, Name: "gw"}); err != nil {
			t.Fatal(err)
		}
	}
	if r.reg, err = assets.NewRegistry(db); err != nil {
		t.Fatal(err)
	}
	o.Clock, o.Timeout = r.clk, time.Minute
	if o.Writer == nil {
		o.Writer = r.w
	}
	r.e = rtls.New(o)
	r.e.SetSite(rigSite())
	r.p = ingest.New(ingest.Options{Registry: r.reg, Writer: r.w, Clock: r.clk, AckWait: 5 * time.Second})
	r.p.AddSubscriber(r.e)
	t.Cleanup(func() {
		_ = r.p.Close()
		r.e.Close()
		_ = r.w.Close()
		_ = db.Close()
	})
	return r
}

// rigSite is the rig's site: Hall and Ward side by side, gwA placed in
// Hall, gwB in Ward.
func rigSite() rtls.Site {
	a, _ := assets.ParseMAC(gwA)
	b, _ := assets.ParseMAC(gwB)
	return rtls.Site{
		Maps: []rtls.Map{{ID: 1, Width: 200, Height: 100, PixelsPerMeter: 10}},
		Zones: []rtls.Zone{
			{ID: 1, MapID: 1, Name: "Hall", X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
			{ID: 2, MapID: 1, Name: "Ward", X1: 100, Y1: 0, X2: 200, Y2: 100, Adjacent: []uint64{1}},
		},
		Gateways: []rtls.Gateway{{MAC: a, MapID: 1, X: 50, Y: 50, Placed: true}, {MAC: b, MapID: 1, X: 150, Y: 50, Placed: true}},
	}
}

// hear publishes one QoS 1 report (so it returns once durable).
func (r *rig) hear(gw, beacon string, rssi int) {
	r.t.Helper()
	payload := fmt.Appendf(nil, `{"reports":[{"mac":%q,"rssi":%d,"beacon_is_pushed":false}]}`, beacon, rssi)
	if err := r.p.HandlePublish(gw, "gw/"+gw+"/adv4", payload, 1); err != nil {
		r.t.Fatal(err)
	}
}

// stay makes beacon heard loudest by gw for secs seconds.
func (r *rig) stay(gw, other, beacon string, secs int) {
	for i := 0; i < secs; i++ {
		r.hear(gw, beacon, -55)
		r.hear(other, beacon, -85)
		r.clk.Advance(time.Second)
	}
}

func (r *rig) intervals(uid string) []store.ZoneInterval {
	r.t.Helper()
	if err := r.w.Flush(); err != nil {
		r.t.Fatal(err)
	}
	ivs, _, err := r.db.ZoneIntervals(uid, store.ZoneCursor{}, 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return ivs
}

func TestZoneIntervalsWrittenAndClosed(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	enter := r.clk.Now().UnixMilli()
	r.stay(gwA, gwB, "C30000000001", 3)
	moved := r.clk.Now().UnixMilli()
	r.stay(gwB, gwA, "C30000000001", 6)
	l, ok := r.e.Location("WAT-1")
	if !ok || l.Zone != 2 || l.ZoneName != "Ward" {
		t.Fatalf("location %+v", l)
	}
	ivs := r.intervals("WAT-1") // newest first
	if len(ivs) != 2 || ivs[1].ZoneID != 1 || ivs[1].Enter != enter || ivs[1].Leave == 0 ||
		ivs[0].ZoneID != 2 || ivs[0].Leave != 0 || ivs[0].Enter != ivs[1].Leave || ivs[0].Enter < moved+3000 {
		t.Fatalf("intervals %+v (moved at %d)", ivs, moved)
	}

	// Not heard for the timeout: unknown, interval closed at the last sighting.
	last := r.clk.Now().Add(-time.Second).UnixMilli()
	var events []rtls.Event
	cancel := r.e.Listen(func(ev rtls.Event) { events = append(events, ev) }, nil)
	defer cancel()
	r.clk.Advance(59 * time.Second)
	if l, _ := r.e.Location("WAT-1"); l.Zone != 2 {
		t.Fatalf("unknown before the timeout: %+v", l)
	}
	r.clk.Advance(16 * time.Second) // timeout plus one sweep period
	if l, ok := r.e.Location("WAT-1"); !ok || l.Zone != 0 {
		t.Fatalf("after the timeout %+v ok=%v, want zone 0", l, ok)
	}
	if len(events) != 1 || events[0].Location.Zone != 0 || events[0].AssetUID != "WAT-1" {
		t.Fatalf("events %+v", events)
	}
	ivs = r.intervals("WAT-1")
	if ivs[0].Leave != last {
		t.Fatalf("closed at %d, want the last sighting %d", ivs[0].Leave, last)
	}
	// Heard again: a new interval.
	r.stay(gwA, gwB, "C30000000001", 1)
	if ivs = r.intervals("WAT-1"); len(ivs) != 3 || ivs[0].ZoneID != 1 || ivs[0].Leave != 0 {
		t.Fatalf("intervals after return %+v", ivs)
	}
	// Stop closes it at the last sighting, as the timeout does, and
	// tells listeners the beacon is unknown; a restart at boot closes
	// anything left open.
	last = r.clk.Now().Add(-time.Second).UnixMilli()
	r.clk.Advance(30 * time.Second)
	events = events[:0]
	r.e.Stop()
	if ivs = r.intervals("WAT-1"); ivs[0].Leave != last {
		t.Fatalf("Stop closed %+v, want at the last sighting %d", ivs[0], last)
	}
	if len(events) != 1 || events[0].Location.Zone != 0 || events[0].AssetUID != "WAT-1" {
		t.Fatalf("events at Stop %+v, want WAT-1's zone 0", events)
	}
}

func TestCloseOpenIntervalsAtStart(t *testing.T) {
	r := newRig(t)
	done := make(chan error, 1)
	r.w.Do(func(tx *bolt.Tx) error {
		for _, uid := range []string{"WAT-1", "WAT-2"} {
			if err := store.AppendZoneInterval(tx, uid, &store.ZoneInterval{ZoneID: 1, Zone: "Hall", Enter: 1000}); err != nil {
				return err
			}
		}
		if err := store.PutLastSeen(map[string]int64{"WAT-1": 4000})(tx); err != nil {
			return err
		}
		return store.CloseZoneIntervalEntered(tx, "WAT-2", 1000, 1500)
	}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.w.Do(func(tx *bolt.Tx) error { _, err := rtls.CloseOpenIntervals(tx, 5000, 0); return err }, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if iv := r.intervals("WAT-1"); iv[0].Leave != 4000 {
		t.Fatalf("WAT-1 %+v, want closed at its last sighting 4000, not at the restart", iv)
	}
	if iv := r.intervals("WAT-2"); iv[0].Leave != 1500 {
		t.Fatalf("a closed interval was changed: %+v", iv)
	}
}

// TestCrashClosesStayAtTheEnginesSighting: each sweep saves the last
// sighting of every beacon in a stay, in the server's clock; a crash's
// open stay closes there at the next start, not at the stored last_seen,
// which is in the gateways' clock (a review: a gateway 4 minutes ahead
// kept a stay open over the downtime, one behind left a 0 s stay).
func TestCrashClosesStayAtTheEnginesSighting(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.stay(gwA, gwB, "C30000000001", 20) // the sweep runs every 15 s
	heard := r.clk.Now().Add(-time.Second).UnixMilli()
	ivs := r.intervals("WAT-1")
	if len(ivs) != 1 || ivs[0].Leave != 0 {
		t.Fatalf("intervals %+v, want one open", ivs)
	}
	r.clk.Advance(15 * time.Second) // a sweep after the last sighting saves it
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	// The crash: the engine's state is gone with the stay still open; the
	// gateway's clock ran 4 minutes behind.
	done := make(chan error, 1)
	r.w.Do(store.PutLastSeen(map[string]int64{"WAT-1": heard - 240_000}), func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	r.w.Do(func(tx *bolt.Tx) error { _, err := rtls.CloseOpenIntervals(tx, heard+600_000, 0); return err }, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if ivs = r.intervals("WAT-1"); ivs[0].Leave != heard {
		t.Fatalf("closed %+v, want at the engine's last sighting %d", ivs[0], heard)
	}
}

// TestSurveysOfMergedBeaconsAreBothKept: a merge of two beacons both
// being surveyed keeps the survivor's recording and adds the other's
// windows; the other's replaced it and the survivor's were lost (a
// review). Status lists the surveys under way.
func TestSurveysOfMergedBeaconsAreBothKept(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-1", 1)
	r.e.Record("WAT-2", 2)
	for range 4 {
		r.hear(gwA, "C30000000001", -60)
		r.hear(gwB, "C30000000002", -60)
		r.clk.Advance(time.Second)
	}
	st := r.e.Status()
	if len(st.Surveys) != 2 || st.Surveys[0].AssetUID != "WAT-1" || st.Surveys[0].Zone != 1 || st.Surveys[0].Windows != 1 ||
		st.Surveys[1].AssetUID != "WAT-2" || st.Surveys[1].Zone != 2 {
		t.Fatalf("surveys under way %+v", st.Surveys)
	}
	r.e.Rename("WAT-2", "WAT-1")
	if st := r.e.Status(); len(st.Surveys) != 1 {
		t.Fatalf("after the merge: %+v", st.Surveys)
	}
	zones := map[uint64]int{}
	for _, s := range r.e.StopRecording("WAT-1") {
		zones[s.Zone]++
	}
	if zones[1] != 2 || zones[2] != 2 {
		t.Fatalf("windows by zone after the merge %v, want two of each", zones)
	}
	if r.e.StopRecording("WAT-2") != nil {
		t.Fatal("the merged-away uid still records")
	}
	if st := r.e.Status(); st.Surveys == nil || len(st.Surveys) != 0 {
		t.Fatalf("surveys after the stop %+v, want []", st.Surveys)
	}
}

// TestStopFollowsOnlyMovedRecordings: a stop by the uid a survey was
// started with finds it after a remint or merge moved it; a stop by a
// merged-away uid that was not being surveyed stops nothing of the
// survivor's (a review: it stopped another admin's survey).
func TestStopFollowsOnlyMovedRecordings(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-1", 1)
	r.e.Rename("WAT-2", "WAT-1") // WAT-2 was not being surveyed
	if got := r.e.StopRecording("WAT-2"); got != nil {
		t.Fatalf("a stop by the merged-away uid stopped the survivor's survey: %+v", got)
	}
	if st := r.e.Status(); len(st.Surveys) != 1 || st.Surveys[0].AssetUID != "WAT-1" {
		t.Fatalf("surveys %+v", st.Surveys)
	}
	r.hear(gwA, "C30000000001", -60)
	r.e.Rename("WAT-1", "WAT-9") // a remint moves the recording
	if got := r.e.StopRecording("WAT-1"); len(got) != 1 || got[0].Zone != 1 {
		t.Fatalf("a stop by the uid the survey began with after a remint: %+v", got)
	}
	if st := r.e.Status(); len(st.Surveys) != 0 {
		t.Fatalf("surveys after the stop %+v", st.Surveys)
	}
}

// TestSurveyKeepsAtMostMaxSurveyWindows: a survey left running keeps
// at most MaxSurveyWindows and counts the rest; it kept every window.
func TestSurveyKeepsAtMostMaxSurveyWindows(t *testing.T) {
	r := newRigParams(t, rtls.Params{SampleWindow: time.Millisecond})
	r.e.Record("WAT-1", 1)
	for range rtls.MaxSurveyWindows + 10 {
		r.hear(gwA, "C30000000001", -60)
		r.clk.Advance(2 * time.Millisecond)
	}
	st := r.e.Status()
	if len(st.Surveys) != 1 || st.Surveys[0].Windows != rtls.MaxSurveyWindows || st.Surveys[0].Over < 9 {
		t.Fatalf("survey %+v", st.Surveys)
	}
	r.zonesInStore()
	if st, err := r.e.StopSurvey("WAT-1", r.clk.Now()); err != nil || len(st.Samples) != rtls.MaxSurveyWindows || st.Over < 9 ||
		!strings.Contains(st.Summary(), fmt.Sprintf("%d windows past the survey's bound not kept", st.Over)) {
		t.Fatalf("stop: %d windows, %d over (%v), want %d: %s", len(st.Samples), st.Over, err, rtls.MaxSurveyWindows, st.Summary())
	}
	// rtls-eval's survey is a whole training file: it sets its own
	// bound (none), which a merge's count of windows not kept follows.
	r = newRigOptions(t, rtls.Options{Params: rtls.Params{SampleWindow: time.Millisecond}, SurveyWindows: 3})
	r.e.Record("WAT-1", 1)
	r.e.Record("WAT-2", 2)
	for range 6 {
		r.hear(gwA, "C30000000001", -60)
		r.hear(gwB, "C30000000002", -60)
		r.clk.Advance(2 * time.Millisecond)
	}
	r.e.Rename("WAT-2", "WAT-1")
	st = r.e.Status()
	if len(st.Surveys) != 1 || st.Surveys[0].Windows != 3 || st.Surveys[0].Over != 8 {
		t.Fatalf("bound 3, merged: %+v", st.Surveys)
	}
}

func TestRenameKeepsLiveState(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.stay(gwB, gwA, "C30000000001", 2)
	r.e.Rename("WAT-1", "WAT-9")
	if _, ok := r.e.Location("WAT-1"); ok {
		t.Fatal("old uid still located")
	}
	if l, ok := r.e.Location("WAT-9"); !ok || l.Zone != 2 || l.AssetUID != "WAT-9" {
		t.Fatalf("renamed location %+v ok=%v", l, ok)
	}
	// Merge into a uid with live state: the more recently heard one wins.
	r.clk.Advance(time.Second)
	r.stay(gwA, gwB, "C30000000002", 1)
	r.e.Rename("WAT-9", "WAT-2")
	if l, _ := r.e.Location("WAT-2"); l.Zone != 1 {
		t.Fatalf("merge kept %+v, want the fresher zone 1", l)
	}
	if got := len(r.e.Locations()); got != 1 {
		t.Fatalf("%d locations after the merge", got)
	}
}

func TestDebugEventsOnlyForFilteredUIDs(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	var debug, track []rtls.Event
	cancel := r.e.Listen(func(ev rtls.Event) {
		if ev.Debug {
			debug = append(debug, ev)
		} else {
			track = append(track, ev)
		}
	}, func(uid string) bool { return uid == "WAT-2" })
	r.hear(gwA, "C30000000001", -60)
	r.hear(gwA, "C30000000002", -61)
	r.hear(gwB, "C30000000002", -70)
	if len(debug) != 2 || debug[1].AssetUID != "WAT-2" || len(debug[1].RSSI) != 2 {
		t.Fatalf("debug events %+v", debug)
	}
	g := debug[1].RSSI[1]
	if g.Gateway != gwB || g.RSSI != -70 || g.Smoothed != -70 || g.At != r.clk.Now().UnixMilli() {
		t.Fatalf("debug reading %+v", g)
	}
	if len(track) != 2 {
		t.Fatalf("track events %+v", track)
	}
	cancel()
	r.hear(gwA, "C30000000002", -61)
	if len(debug) != 2 {
		t.Fatal("event after cancel")
	}
}

func TestRecordSurveySamples(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-1", 2) // works while tracking is stopped
	for i := 0; i < 4; i++ {
		r.hear(gwA, "C30000000001", -60-i)
		r.hear(gwB, "C30000000001", -80)
		r.clk.Advance(time.Second)
	}
	got := r.e.StopRecording("WAT-1")
	a, _ := assets.ParseMAC(gwA)
	b, _ := assets.ParseMAC(gwB)
	// Two 2-second windows: readings at 0,1 s and 2,3 s.
	if len(got) != 2 || got[0].Zone != 2 || got[0].RSSI[a] != -60.5 || got[1].RSSI[a] != -62.5 {
		t.Fatalf("samples %+v", got)
	}
	// Each mean says how many readings it holds and their spread about
	// it (grid's fading, gridGW.fade).
	if got[0].N[a] != 2 || math.Abs(got[0].SD[a]-math.Sqrt(0.5)) > 1e-12 || got[0].N[b] != 2 || got[0].SD[b] != 0 {
		t.Fatalf("first window: readings %v, spread %v", got[0].N, got[0].SD)
	}
	r.e.Record("WAT-1", 3)
	r.hear(gwA, "C30000000001", -70)
	if one := r.e.StopRecording("WAT-1"); len(one) != 1 || one[0].N[a] != 1 || one[0].SD != nil {
		t.Fatalf("a window of one reading: %+v (no spread to tell)", one)
	}
	if r.e.StopRecording("WAT-1") != nil {
		t.Fatal("second stop returned samples")
	}
	r.e.SetSamples(got)
	if st := r.e.Status(); st.Samples != 2 || st.Running {
		t.Fatalf("status %+v", st)
	}
}

// TestSurveyCountsAResentReportOnce: a gateway that got no PUBACK sends
// its QoS 1 publish again, the same reports with the same times: the
// survey counts each reading once (counted twice, a window of -60 and
// -62 held four readings and a spread of 1.15 dB instead of 1.41).
// Readings of the same RSSI at other times all count.
func TestSurveyCountsAResentReportOnce(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-1", 2)
	publish := func(ts int64, rssi int) {
		payload := fmt.Appendf(nil, `{"ts":%d,"reports":[{"mac":"C30000000001","rssi":%d,"beacon_is_pushed":false}]}`, ts, rssi)
		if err := r.p.HandlePublish(gwA, "gw/"+gwA+"/adv4", payload, 1); err != nil {
			t.Fatal(err)
		}
	}
	t0 := r.clk.Now().UnixMilli()
	publish(t0, -60)
	r.clk.Advance(300 * time.Millisecond)
	publish(t0, -60) // the same publish again
	r.clk.Advance(700 * time.Millisecond)
	publish(t0+1000, -62)
	publish(t0+1000, -62)
	r.clk.Advance(time.Second)
	publish(t0+2000, -62) // a new reading, as loud
	publish(t0+3000, -62)
	got := r.e.StopRecording("WAT-1")
	a, _ := assets.ParseMAC(gwA)
	if len(got) != 2 || got[0].N[a] != 2 || math.Abs(got[0].SD[a]-math.Sqrt(2)) > 1e-9 || got[1].N[a] != 2 {
		t.Fatalf("samples %+v", got)
	}
}

// TestSurveyWindowsHoldWholeScans: scans a second apart whose two
// reports come some milliseconds apart, the first earlier in its second
// in some scans than in others (gateways publishing on their own). Each
// 2 s sample must hold two whole scans: a window that ends 2 s after its
// first report took the early first report of every other scan and left
// the rest of that scan to the next sample.
func TestSurveyWindowsHoldWholeScans(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-1", 2)
	first := []time.Duration{10, 3, 5, 8, 1, 12, 2, 9} // ms into each scan's second
	at := time.Duration(0)
	for k, f := range first {
		for i, gw := range []string{gwA, gwB} {
			next := time.Duration(k)*time.Second + (f+time.Duration(7*i))*time.Millisecond
			r.clk.Advance(next - at)
			at = next
			r.hear(gw, "C30000000001", -60-k)
		}
	}
	got := r.e.StopRecording("WAT-1")
	a, _ := assets.ParseMAC(gwA)
	b, _ := assets.ParseMAC(gwB)
	if len(got) != 4 {
		t.Fatalf("%d samples, want 4: %+v", len(got), got)
	}
	for n, s := range got {
		if want := -60.5 - 2*float64(n); s.RSSI[a] != want || s.RSSI[b] != want {
			t.Fatalf("sample %d: %v, want both gateways at %v (scans %d and %d)", n, s.RSSI, want, 2*n, 2*n+1)
		}
	}
}

func TestStartUnknownAlgorithm(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start("nope"); err != rtls.ErrUnknownAlgorithm {
		t.Fatalf("err %v", err)
	}
	if r.e.Current() != "" {
		t.Fatal("running after a failed start")
	}
	for _, a := range r.e.Algorithms() {
		if err := r.e.Start(a.Name); err != nil || r.e.Current() != a.Name {
			t.Fatalf("start %s: %v", a.Name, err)
		}
	}
}

func TestSiteEditKeepsZonesByID(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.stay(gwB, gwA, "C30000000001", 2)
	a, _ := assets.ParseMAC(gwA)
	b, _ := assets.ParseMAC(gwB)
	gws := []rtls.Gateway{{MAC: a, MapID: 1, X: 50, Y: 50, Placed: true}, {MAC: b, MapID: 1, X: 150, Y: 50, Placed: true}}
	// The same zones listed in another order: the beacon stays in Ward.
	r.e.SetSite(rtls.Site{Maps: []rtls.Map{{ID: 1}}, Gateways: gws, Zones: []rtls.Zone{
		{ID: 2, MapID: 1, Name: "Ward", X1: 100, Y1: 0, X2: 200, Y2: 100, Adjacent: []uint64{1}},
		{ID: 1, MapID: 1, Name: "Hall", X1: 0, Y1: 0, X2: 100, Y2: 100, Adjacent: []uint64{2}},
	}})
	if l, _ := r.e.Location("WAT-1"); l.Zone != 2 || l.ZoneName != "Ward" {
		t.Fatalf("after reordering %+v", l)
	}
	// Ward deleted: unknown at once; the next sighting closes its interval
	// and opens one in the nearest remaining zone.
	r.e.SetSite(rtls.Site{Maps: []rtls.Map{{ID: 1}}, Gateways: gws, Zones: []rtls.Zone{
		{ID: 1, MapID: 1, Name: "Hall", X1: 0, Y1: 0, X2: 100, Y2: 100},
	}})
	if l, _ := r.e.Location("WAT-1"); l.Zone != 0 {
		t.Fatalf("deleted zone still reported: %+v", l)
	}
	r.stay(gwB, gwA, "C30000000001", 1)
	ivs := r.intervals("WAT-1")
	if len(ivs) != 2 || ivs[1].ZoneID != 2 || ivs[1].Leave == 0 || ivs[0].ZoneID != 1 || ivs[0].Leave != 0 {
		t.Fatalf("intervals %+v", ivs)
	}
}

// TestZoneIntervalsStayOrderedUnderConcurrentGateways: gateways publish
// on their own read loops, so reports of one beacon reach the engine
// concurrently, and a report stamped earlier can take the beacon's lock
// later. Whatever the interleaving, a beacon's stored intervals must be
// one contiguous, ordered chain: ordinal order is enter order, each
// interval ends where the next begins, none ends before it starts, and
// only the newest is open. Strongest gateway without hysteresis, deciding
// on every report, makes every report a possible zone change.
func TestZoneIntervalsStayOrderedUnderConcurrentGateways(t *testing.T) {
	// At least ten fresh runs of a few ms each (one run rarely meets the
	// interleaving that breaks the chain), and more until five have
	// interleaved the two gateways: a run in which the scheduler let one
	// gateway finish before the other began changes no zone and proves
	// nothing, and a loaded host makes more of those. (The filters
	// integrate this alternation and rarely change zone: strongest it
	// is.)
	interleaved, runs := 0, 0
	for ; (runs < 10 || interleaved < 5) && runs < 40; runs++ {
		if intervalsUnderConcurrentGateways(t, rtls.AlgStrongest) {
			interleaved++
		}
	}
	if interleaved < 5 {
		t.Fatalf("only %d of %d runs interleaved the gateways' reports", interleaved, runs)
	}
}

// intervalsUnderConcurrentGateways runs one rig; false when its beacons
// changed zone too rarely to say anything.
func intervalsUnderConcurrentGateways(t *testing.T, alg string) bool {
	r := newRigParams(t, rtls.Params{DecideEvery: -1, Margin: 0.01, MarginDwell: time.Millisecond, SmoothTau: time.Millisecond})
	if err := r.e.Start(alg); err != nil {
		t.Fatal(err)
	}
	const rounds = 3000
	beacons := []string{"C30000000001", "C30000000002"}
	// Each gateway publishes on its own goroutine, as read loops do,
	// alternating loud and faint, and moves time on after each report:
	// nearly every report changes the strongest gateway, and reports of
	// the two gateways interleave freely.
	var gws sync.WaitGroup
	start := make(chan struct{})
	for gi, gw := range []string{gwA, gwB} {
		gws.Add(1)
		go func() {
			defer gws.Done()
			<-start
			for i := 0; i < rounds; i++ {
				for _, b := range beacons {
					rssi := -80
					if (i+gi)%2 == 0 {
						rssi = -50
					}
					payload := fmt.Appendf(nil, `{"reports":[{"mac":%q,"rssi":%d,"beacon_is_pushed":false}]}`, b, rssi)
					if err := r.p.HandlePublish(gw, "gw/"+gw+"/adv4", payload, 0); err != nil {
						t.Error(err)
					}
				}
				r.clk.Advance(time.Millisecond)
			}
		}()
	}
	close(start)
	gws.Wait()
	changed := true
	for _, uid := range []string{"WAT-1", "WAT-2"} {
		if err := r.w.Flush(); err != nil {
			t.Fatal(err)
		}
		ivs, _, err := r.db.ZoneIntervals(uid, store.ZoneCursor{}, 200) // newest first
		if err != nil {
			t.Fatal(err)
		}
		if len(ivs) < 2 {
			changed = false
			continue
		}
		if ivs[0].Leave != 0 {
			t.Errorf("%s: newest interval %+v is closed", uid, ivs[0])
		}
		for i := 1; i < len(ivs); i++ {
			older, newer := ivs[i], ivs[i-1]
			if older.Leave == 0 || older.Leave != newer.Enter || older.Leave < older.Enter || newer.Enter < older.Enter {
				t.Fatalf("%s %s: intervals out of order or broken:\n older %+v\n newer %+v", alg, uid, older, newer)
			}
		}
	}
	return changed
}

// TestRenameDoesNotOverlapIntervals: between the registry's reload and
// Rename, reports already resolve to the new uid and open its interval;
// the old state's interval, closed by Rename, must end before that one
// began (at its last sighting), not at the rename's time.
func TestRenameDoesNotOverlapIntervals(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.stay(gwA, gwB, "C30000000001", 3) // WAT-1 in the hall, interval open
	a, _ := assets.ParseMAC(gwA)
	nb := &assets.Asset{UID: "WAT-9", Type: "watch", Kind: "beacon"}
	for range 2 { // the registry reloaded: the beacon is WAT-9 now
		w := &ingest.Writes{}
		r.e.Observe(&ingest.Batch{Gateway: a, Kind: ingest.KindAdv4, Received: r.clk.Now().UnixMilli(),
			Obs: []ingest.Observation{{Report: ingest.Report{RSSI: -55}, Asset: nb}}}, w)
		for _, op := range w.Ops {
			r.w.Do(op, nil)
		}
		r.clk.Advance(time.Second)
	}
	if err := r.w.Flush(); err != nil { // the uid sweep: flush, store rename, followers
		t.Fatal(err)
	}
	if err := r.db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error { _, err := tx.RenameUID("WAT-1", "WAT-9"); return err }); err != nil {
		t.Fatal(err)
	}
	r.e.Rename("WAT-1", "WAT-9")
	ivs := r.intervals("WAT-9") // newest first
	if len(ivs) != 2 {
		t.Fatalf("intervals %+v, want the old stay and the new", ivs)
	}
	for i := 0; i+1 < len(ivs); i++ {
		older, newer := ivs[i+1], ivs[i]
		if older.Leave == 0 || older.Leave > newer.Enter {
			t.Fatalf("overlapping intervals of one beacon: %+v then %+v", older, newer)
		}
	}
}

// TestRefinedFirstFixLeavesNoPhantomStay: a beacon first heard by a far
// gateway, its scan's next report (50 ms on) from a near one, is recorded
// entering the near gateway's zone only: the first report's fix, refined
// within its scan, rewrites the stay it opened. Each start, restart and
// first sighting recorded a stay of some 50 ms in a zone the beacon was
// never in (a review), and the live feed still shows both decisions.
func TestRefinedFirstFixLeavesNoPhantomStay(t *testing.T) {
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgCentroid} {
		r := newRig(t)
		if err := r.e.Start(alg); err != nil {
			t.Fatal(err)
		}
		var zones []uint64
		cancel := r.e.Listen(func(ev rtls.Event) { zones = append(zones, ev.Location.Zone) }, nil)
		enter := r.clk.Now().UnixMilli()
		r.hear(gwA, "C30000000001", -95)
		r.clk.Advance(50 * time.Millisecond)
		r.hear(gwB, "C30000000001", -40)
		cancel()
		ivs := r.intervals("WAT-1")
		if len(ivs) != 1 || ivs[0].ZoneID != 2 || ivs[0].Enter != enter || ivs[0].Leave != 0 {
			t.Errorf("%s: intervals %+v, want one open in zone 2 from %d", alg, ivs, enter)
		}
		if len(zones) != 2 || zones[0] != 1 || zones[1] != 2 {
			t.Errorf("%s: track events for zones %v, want 1 then 2", alg, zones)
		}
	}
}

// mergeInStore does a merge's store side as the asset service does,
// once the writer has committed what was queued: the merge's windows,
// then the rename (with the alias the merge records, or without, as the
// uid sweep after the reload).
func (r *rig) mergeInStore(from, to string, alias bool) {
	r.t.Helper()
	if err := r.w.Flush(); err != nil {
		r.t.Fatal(err)
	}
	if err := r.db.UpdateAssets(r.clk.Now(), func(tx *store.AssetTx) error {
		if _, err := tx.DropZoneIntervalsBeforeUID(from, to); err != nil {
			return err
		}
		if _, err := tx.RenameUID(from, to); err != nil || !alias {
			return err
		}
		return tx.SetAlias(from, to)
	}); err != nil {
		r.t.Fatal(err)
	}
}

// TestMergeRenameClosesEachStayAtItsOwnSighting: two tags' stays that
// began in the same millisecond, merged: the store's windows drop the
// source's, and MergeRename closes the survivor's at the survivor's own
// last sighting. The source's close, by entry time, went first and took
// the survivor's stay, closing it when the other tag was last heard (a
// review).
func TestMergeRenameClosesEachStayAtItsOwnSighting(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.hear(gwA, "C30000000001", -50) // both located in the same millisecond
	r.hear(gwB, "C30000000002", -50)
	r.clk.Advance(time.Second)
	r.hear(gwA, "C30000000001", -50)
	survHeard := r.clk.Now().UnixMilli()
	for range 5 { // the source is heard on, the survivor not
		r.clk.Advance(time.Second)
		r.hear(gwB, "C30000000002", -50)
	}
	r.mergeInStore("WAT-2", "WAT-1", false)
	r.e.MergeRename("WAT-2", "WAT-1", true)
	ivs := r.intervals("WAT-1")
	if len(ivs) != 1 || ivs[0].Zone != "Hall" || ivs[0].Leave != survHeard {
		t.Fatalf("after the merge: %+v; want the survivor's Hall stay closed at its own last sighting %d", ivs, survHeard)
	}
}

// TestCloseQueuedBehindAMergeFindsTheMovedStay: the source's stay moves
// to the survivor in the merge's transaction, but the engine learns of
// the merge only after the registry's reload; a zone change it decides
// in between closes the stay under the source's uid. That close follows
// the move: before, it found nothing, and the survivor's history kept
// the stay open until the next start's repair (a review's residual race).
func TestCloseQueuedBehindAMergeFindsTheMovedStay(t *testing.T) {
	r := newRig(t)
	if err := r.e.Start(rtls.AlgStrongest); err != nil {
		t.Fatal(err)
	}
	r.stay(gwB, gwA, "C30000000002", 3) // the source in Ward; the survivor never heard
	r.mergeInStore("WAT-2", "WAT-1", true)
	r.stay(gwA, gwB, "C30000000002", 6) // still WAT-2 to the engine: moves to Hall
	heard := r.clk.Now().Add(-time.Second).UnixMilli()
	r.mergeInStore("WAT-2", "WAT-1", false) // the uid sweep
	r.e.MergeRename("WAT-2", "WAT-1", true)
	ivs := r.intervals("WAT-1") // newest first
	if len(ivs) != 2 || ivs[1].Zone != "Ward" || ivs[1].Leave == 0 || ivs[0].Zone != "Hall" || ivs[0].Enter != ivs[1].Leave || ivs[0].Leave != heard {
		t.Fatalf("after the merge: %+v; want Ward closed where Hall began, Hall closed at %d", ivs, heard)
	}
}

// TestHeldStayClosesAtTheZoneGatewaysLastSighting: a beacon heard only by
// a gateway in no zone keeps its zone for the not-heard timeout; when
// that runs out its stay closes where the evidence for the zone ended,
// at the zone gateway's last sighting, as a silent beacon's closes at its
// last, not at the report that noticed a timeout later.
func TestHeldStayClosesAtTheZoneGatewaysLastSighting(t *testing.T) {
	const gwC = "AC233FA00009" // registered, in no zone
	c, _ := assets.ParseMAC(gwC)
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgCentroid} {
		for _, where := range []struct {
			name string
			gw   rtls.Gateway
		}{
			{"unplaced", rtls.Gateway{MAC: c}},
			// On a map with no zones: centroid's point there had no
			// zone, and the beacon kept its old one for as long as it
			// was heard so, with a position from the other map (a
			// review).
			{"on a map without zones", rtls.Gateway{MAC: c, MapID: 2, X: 50, Y: 50, Placed: true}},
		} {
			for _, ending := range []string{"runs out", "stop", "timeout", "heard again", "zone gateway between decisions", "crash"} {
				t.Run(alg+"/"+where.name+"/"+ending, func(t *testing.T) {
					r := newRig(t)
					if err := r.db.CreateGateway(&store.Gateway{AssetUID: "GW-" + gwC, MAC: gwC, Name: "gw"}); err != nil {
						t.Fatal(err)
					}
					if err := r.reg.Reload(); err != nil {
						t.Fatal(err)
					}
					s := rigSite()
					s.Maps = append(s.Maps, rtls.Map{ID: 2, Width: 100, Height: 100, PixelsPerMeter: 10})
					s.Gateways = append(s.Gateways, where.gw)
					r.e.SetSite(s)
					if err := r.e.Start(alg); err != nil {
						t.Fatal(err)
					}
					enter := r.clk.Now().UnixMilli()
					for range 5 {
						r.hear(gwA, "C30000000001", -60)
						r.hear(gwC, "C30000000001", -50)
						r.clk.Advance(time.Second)
					}
					last := r.clk.Now().Add(-time.Second).UnixMilli() // gwA's last sighting
					held := func(secs int) {
						for range secs {
							r.hear(gwC, "C30000000001", -50)
							r.clk.Advance(time.Second)
						}
					}
					// However the hold ends (a review: a stop closed the
					// stay 9 s late, a crash 27 s).
					switch ending {
					case "runs out":
						held(70)
						if l, _ := r.e.Location("WAT-1"); l.Zone != 0 {
							t.Fatalf("heard only outside the zones past the timeout: %+v", l)
						}
					case "stop":
						held(20)
						r.e.Stop()
					case "timeout":
						held(20)
						r.clk.Advance(80 * time.Second)
					case "heard again": // the hold is over: the timeout closes at the last sighting
						held(20)
						for range 3 {
							r.hear(gwA, "C30000000001", -60)
							r.clk.Advance(time.Second)
						}
						last = r.clk.Now().Add(-time.Second).UnixMilli()
						r.clk.Advance(80 * time.Second)
					case "zone gateway between decisions": // then silence
						held(20)
						r.hear(gwC, "C30000000001", -50) // decides
						r.clk.Advance(300 * time.Millisecond)
						r.hear(gwA, "C30000000001", -60) // not due: no decision
						last = r.clk.Now().UnixMilli()
						r.clk.Advance(90 * time.Second)
					case "crash":
						held(20) // the sweeps save where the stay ends
						if err := r.w.Flush(); err != nil {
							t.Fatal(err)
						}
						if err := r.db.Update(func(tx *bolt.Tx) error { // the next start's repair
							_, err := rtls.CloseOpenIntervals(tx, r.clk.Now().UnixMilli(), 0)
							return err
						}); err != nil {
							t.Fatal(err)
						}
					}
					ivs := r.intervals("WAT-1")
					if len(ivs) != 1 || ivs[0].ZoneID != 1 || ivs[0].Enter != enter || ivs[0].Leave != last {
						t.Fatalf("%s: intervals %+v, want one in zone 1 from %d to the zone gateway's last sighting %d", ending, ivs, enter, last)
					}
				})
			}
		}
	}
}

// TestFirstFixWaitsForTheScansSpreadReports: gateways publish on their own
// timers, so one advertisement's reports come hundreds of milliseconds
// apart. A first fix taken at the first report went to whichever gateway
// reported first, and strongest's hysteresis kept it there, recorded, for
// about 4 s (a review: 200 ms apart). The reports of the first second
// refine the first fix, so the first stay is the right zone's.
func TestFirstFixWaitsForTheScansSpreadReports(t *testing.T) {
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgCentroid, rtls.AlgBayes, rtls.AlgFusion} {
		// DecideEvery shorter than the window: a new decision inside it
		// brought the hysteresis back (a review).
		for _, every := range []time.Duration{-1, 150 * time.Millisecond, 3 * time.Second} { // -1: every report
			t.Run(alg+"/"+every.String(), func(t *testing.T) {
				r := newRigParams(t, rtls.Params{DecideEvery: every})
				if err := r.e.Start(alg); err != nil {
					t.Fatal(err)
				}
				enter := r.clk.Now().UnixMilli()
				for i := range 7 {
					r.hear(gwB, "C30000000001", -75) // the far gateway reports first
					if i == 0 {
						r.hear(gwB, "C30000000001", -75) // twice in the first fix's millisecond (a review)
					}
					r.clk.Advance(200 * time.Millisecond)
					r.hear(gwA, "C30000000001", -55)
					r.clk.Advance(800 * time.Millisecond)
				}
				ivs := r.intervals("WAT-1")
				if len(ivs) != 1 || ivs[0].Zone != "Hall" || ivs[0].Enter != enter || ivs[0].Leave != 0 {
					t.Fatalf("intervals %+v, want one open stay in Hall from the first report %d", ivs, enter)
				}
			})
		}
	}
}

// TestFixAfterASilenceWaitsForTheScansSpreadReports: a beacon heard again
// after a silence longer than Stale (its readings all stale, the timeout
// not yet reached) is fixed afresh, like a first fix: a far gateway
// reporting its scan first put it in that gateway's zone at once, where
// the hysteresis held it, recorded, for about 4 s (a review, strongest,
// reports 150-200 ms apart). A beacon that did move in the silence is
// still placed in its new zone, by strongest within the scan it is heard
// again in. centroid and the filters never took the first report alone:
// they are here to keep it so.
func TestFixAfterASilenceWaitsForTheScansSpreadReports(t *testing.T) {
	for _, alg := range []string{rtls.AlgStrongest, rtls.AlgCentroid, rtls.AlgBayes, rtls.AlgFusion} {
		for _, every := range []time.Duration{-1, 150 * time.Millisecond, 3 * time.Second} { // -1: every report
			for _, moved := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/moved=%v", alg, every, moved), func(t *testing.T) {
					r := newRigParams(t, rtls.Params{DecideEvery: every})
					if err := r.e.Start(alg); err != nil {
						t.Fatal(err)
					}
					enter := r.clk.Now().UnixMilli()
					for range 7 {
						r.hear(gwA, "C30000000001", -55)
						r.hear(gwB, "C30000000001", -75)
						r.clk.Advance(time.Second)
					}
					r.clk.Advance(9 * time.Second) // past Stale (6 s), short of the timeout
					back := r.clk.Now().UnixMilli()
					near, far := gwA, gwB
					if moved {
						near, far = gwB, gwA
					}
					for range 7 {
						r.hear(far, "C30000000001", -75) // the far gateway reports first
						r.clk.Advance(150 * time.Millisecond)
						r.hear(near, "C30000000001", -55)
						r.clk.Advance(850 * time.Millisecond)
					}
					// strongest fixes it afresh within the scan; the others
					// keep their hysteresis (Dwell, the filters' odds) and
					// their decision rate.
					by := int64(math.MaxInt64)
					if alg == rtls.AlgStrongest {
						by = back + 1000
					}
					ivs := r.intervals("WAT-1")
					switch {
					case !moved && (len(ivs) != 1 || ivs[0].Zone != "Hall" || ivs[0].Enter != enter || ivs[0].Leave != 0):
						t.Fatalf("intervals %+v, want one open stay in Hall from %d", ivs, enter)
					case moved && (len(ivs) != 2 || ivs[1].Zone != "Hall" || ivs[0].Zone != "Ward" || ivs[0].Enter > by || ivs[0].Leave != 0):
						t.Fatalf("intervals %+v (newest first), want Hall, then Ward (strongest: within a second of %d, when it was heard again)", ivs, back)
					}
				})
			}
		}
	}
}
