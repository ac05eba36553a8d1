package rtls_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"beaconhub/appliance/rtls"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// zonesInStore gives the rig's store the site's two zones (ids 1 and 2),
// so samples of them can be stored.
func (r *rig) zonesInStore() {
	r.t.Helper()
	img, err := r.db.PutMapImage("image/png", []byte("png"))
	if err != nil {
		r.t.Fatal(err)
	}
	m, err := r.db.PutMap(store.Map{Name: "ground", ImageID: img, Width: 200, Height: 100}, t0)
	if err != nil {
		r.t.Fatal(err)
	}
	for i, name := range []string{"Hall", "Ward"} {
		z, err := r.db.PutZone(store.Zone{MapID: m.ID, Name: name, X1: float64(100 * i), X2: float64(100*i + 100), Y2: 100})
		if err != nil || z.ID != uint64(i+1) {
			r.t.Fatalf("zone %+v, %v", z, err)
		}
	}
}

// crash is the next start's recovery of what the sweep saved (the
// engine's memory is what a crash loses, so it is simply not asked).
func (r *rig) crash() []store.ZoneSurveyStored {
	r.t.Helper()
	if err := r.w.Flush(); err != nil {
		r.t.Fatal(err)
	}
	var got []store.ZoneSurveyStored
	if err := r.db.Update(func(tx *bolt.Tx) (err error) { got, err = store.RecoverZoneSurveys(tx, r.clk.Now()); return err }); err != nil {
		r.t.Fatal(err)
	}
	return got
}

// surveyBoth records WAT-1 in zone 1 and WAT-2 in zone 2 for secs
// seconds, then lets a sweep pass; it returns their finished windows.
func (r *rig) surveyBoth(secs int) (w1, w2 int) {
	r.t.Helper()
	r.e.Record("WAT-1", 1)
	r.e.Record("WAT-2", 2)
	for range secs {
		r.hear(gwA, "C30000000001", -60)
		r.hear(gwB, "C30000000002", -62)
		r.clk.Advance(time.Second)
	}
	st := r.e.Status().Surveys
	if len(st) != 2 || st[0].Windows < 2 || st[1].Windows < 2 {
		r.t.Fatalf("surveys %+v", st)
	}
	r.clk.Advance(15 * time.Second) // the sweep
	return st[0].Windows, st[1].Windows
}

// TestSurveyWindowsSurviveACrash: each sweep saves the windows a survey
// finished, and the next start stores them under the uid the recording
// is under then (a remint's), each once (a merge's windows are saved
// again as the survivor's and the merged-away recording's forgotten).
// A crash lost every window of a survey under way (a review).
func TestSurveyWindowsSurviveACrash(t *testing.T) {
	r := newRig(t)
	r.zonesInStore()
	w1, _ := r.surveyBoth(9)
	r.e.Rename("WAT-1", "WAT-9") // a remint
	r.e.Rename("WAT-2", "WAT-9") // a merge: both recordings go on as one
	st := r.e.Status().Surveys
	if len(st) != 1 {
		t.Fatalf("surveys after the merge %+v", st)
	}
	got := r.crash()
	if len(got) != 1 || got[0].AssetUID != "WAT-9" || len(got[0].Samples) != st[0].Windows || got[0].Dropped+got[0].Full != 0 {
		t.Fatalf("recovered %+v; want the %d windows under way, under WAT-9", got, st[0].Windows)
	}
	zones := map[uint64]int{}
	for _, s := range got[0].Samples {
		zones[s.Zone]++
		if s.AssetUID != "WAT-9" || s.RSSI[gwA]+s.RSSI[gwB] == 0 {
			t.Errorf("sample %+v", s)
		}
	}
	if zones[1] != w1 || zones[2] != st[0].Windows-w1 {
		t.Fatalf("windows by zone %v, want %d in zone 1", zones, w1)
	}

	// A remint alone: the recording's saved windows follow its new uid.
	r = newRig(t)
	r.zonesInStore()
	w1, w2 := r.surveyBoth(9)
	r.e.Rename("WAT-1", "WAT-9")
	got = r.crash()
	if len(got) != 2 || got[0].AssetUID != "WAT-9" || len(got[0].Samples) != w1 || got[1].AssetUID != "WAT-2" || len(got[1].Samples) != w2 {
		t.Fatalf("recovered %+v; want WAT-9's %d windows and WAT-2's %d", got, w1, w2)
	}
}

// TestSurveyStopForgetsSavedWindows: a survey stopped (and stored) or
// stopped for rtls-eval (not stored) leaves nothing for the next start:
// stored again, a crash after a stop would double the survey.
func TestSurveyStopForgetsSavedWindows(t *testing.T) {
	r := newRig(t)
	r.zonesInStore()
	w1, _ := r.surveyBoth(9)
	st, err := r.e.StopSurvey("WAT-1", r.clk.Now())
	if err != nil || st.AssetUID != "WAT-1" || len(st.Samples) != w1+1 { // the window under way too
		t.Fatalf("stop: %+v, %v; want %d windows", st, err, w1+1)
	}
	if r.e.StopRecording("WAT-2") == nil {
		t.Fatal("WAT-2 was not recording")
	}
	if got := r.crash(); got != nil {
		t.Fatalf("a start after the stops recovered %+v", got)
	}
	if all, err := r.db.ListZoneSamples(0); err != nil || len(all) != w1+1 {
		t.Fatalf("stored %d, %v; want the stop's %d", len(all), err, w1+1)
	}
	if _, err := r.e.StopSurvey("WAT-1", r.clk.Now()); err == nil {
		t.Fatal("a second stop succeeded")
	}
}

// flakyWriter is the rig's writer with failures on demand: while fail is
// set an op is not run and its done gets an error, as a commit that
// fails; held makes Do wait until release (a full queue).
type flakyWriter struct {
	w       *store.Writer
	fail    atomic.Bool
	hold    atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (f *flakyWriter) Do(fn func(*bolt.Tx) error, done func(error)) {
	if f.hold.Load() {
		f.entered <- struct{}{}
		<-f.release
	}
	if f.fail.Load() {
		if done != nil {
			done(errors.New("disk error"))
		}
		return
	}
	f.w.Do(fn, done)
}

func newFlakyRig(t *testing.T) (*rig, *flakyWriter) {
	t.Helper()
	f := &flakyWriter{entered: make(chan struct{}), release: make(chan struct{})}
	r := newRigOptions(t, rtls.Options{Writer: f})
	f.w = r.w // before the engine queues anything
	return r, f
}

// TestSurveySavesThatFailAreMadeAgain: a sweep's save or a merge's op
// that does not commit is made again at the next sweep, and the merged
// recording's windows are dropped then or at the stop: a failed merge
// op left them to be stored twice, and a failed save left windows a
// crash then lost (a review). A stop whose store fails keeps the survey
// recording, so a second stop stores it.
func TestSurveySavesThatFailAreMadeAgain(t *testing.T) {
	r, f := newFlakyRig(t)
	r.zonesInStore()
	r.surveyBoth(9) // saved
	f.fail.Store(true)
	r.e.Rename("WAT-2", "WAT-1") // the merge's op fails
	for range 4 {
		r.hear(gwA, "C30000000001", -60)
		r.clk.Advance(time.Second)
	}
	r.clk.Advance(15 * time.Second) // this sweep's save fails too
	f.fail.Store(false)
	r.clk.Advance(15 * time.Second) // the next saves everything again
	windows := r.e.Status().Surveys[0].Windows
	if err := r.w.Flush(); err != nil {
		t.Fatal(err)
	}
	var saved []store.ZoneSurveyStored
	// What a crash now would store, rolled back.
	rollback := errors.New("rollback")
	if err := r.db.Update(func(tx *bolt.Tx) error {
		var err error
		if saved, err = store.RecoverZoneSurveys(tx, r.clk.Now()); err != nil {
			return err
		}
		return rollback
	}); err != rollback {
		t.Fatal(err)
	}
	if len(saved) != 1 || saved[0].AssetUID != "WAT-1" || len(saved[0].Samples) != windows {
		t.Fatalf("saved %d recordings; want WAT-1's %d windows once", len(saved), windows)
	}
	f.fail.Store(true)
	if _, err := r.e.StopSurvey("WAT-1", r.clk.Now()); err == nil {
		t.Fatal("a stop whose store failed succeeded")
	}
	f.fail.Store(false)
	st, err := r.e.StopSurvey("WAT-1", r.clk.Now())
	if err != nil || len(st.Samples) != windows+1 {
		t.Fatalf("the second stop: %d stored, %v; want %d", len(st.Samples), err, windows+1)
	}
	if got := r.crash(); got != nil {
		t.Fatalf("after the stop a start recovered %+v", got)
	}
}

// TestSurveyStopDoesNotHoldUpIngest: a stop waiting for room in a full
// writer queue does not keep ingest from recording the other surveys;
// it waited under the lock ingest takes (a review).
func TestSurveyStopDoesNotHoldUpIngest(t *testing.T) {
	r, f := newFlakyRig(t)
	r.e.Record("WAT-1", 1)
	r.e.Record("WAT-2", 2)
	f.hold.Store(true)
	stopped := make(chan error, 1)
	go func() { _, err := r.e.StopSurvey("WAT-1", r.clk.Now()); stopped <- err }()
	<-f.entered // the stop waits in Do
	f.hold.Store(false)
	heard := make(chan struct{})
	go func() {
		defer close(heard)
		r.hear(gwB, "C30000000002", -60) // through the rig's own writer, which is free
	}()
	select {
	case <-heard:
	case <-time.After(10 * time.Second):
		close(f.release) // lets both go, so the test ends
		t.Fatal("ingest waited for the stop's writer queue")
	}
	close(f.release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
}

// TestFailedStopKeepsTheMove: a stop by a merged-away uid whose store
// fails leaves the survey as it was, so the same stop again stores it;
// the put-back lost the move, and the retry answered "not recording"
// while the survey went on (a review).
func TestFailedStopKeepsTheMove(t *testing.T) {
	r, f := newFlakyRig(t)
	r.zonesInStore()
	r.surveyBoth(9)
	r.e.Rename("WAT-2", "WAT-1") // a merge: WAT-2's stop finds the survivor's
	windows := r.e.Status().Surveys[0].Windows
	f.fail.Store(true)
	if _, err := r.e.StopSurvey("WAT-2", r.clk.Now()); err == nil || errors.Is(err, rtls.ErrNotRecording) {
		t.Fatalf("a stop whose store failed: %v", err)
	}
	f.fail.Store(false)
	st, err := r.e.StopSurvey("WAT-2", r.clk.Now())
	if err != nil || st.AssetUID != "WAT-1" || len(st.Samples) != windows+1 { // the window under way too
		t.Fatalf("the stop again: %s, %d stored, %v; want WAT-1's %d", st.AssetUID, len(st.Samples), err, windows+1)
	}
}

// TestSurveyCrashKnowsStartAndBound: a survey that finished no window
// before a crash is still reported at the next start (0 samples: it
// left no trace), and one past its bound says how many windows it did
// not keep (lost across the crash), both from the saved header (a
// review).
func TestSurveyCrashKnowsStartAndBound(t *testing.T) {
	r := newRigOptions(t, rtls.Options{Params: rtls.Params{SampleWindow: time.Millisecond}, SurveyWindows: 3})
	r.zonesInStore()
	r.e.Record("WAT-1", 1)
	r.e.Record("WAT-2", 2)
	for range 8 {
		r.hear(gwA, "C30000000001", -60)
		r.clk.Advance(2 * time.Millisecond)
	}
	r.clk.Advance(15 * time.Second) // the sweep
	got := r.crash()
	if len(got) != 2 || got[0].AssetUID != "WAT-1" || len(got[0].Samples) != 3 || got[0].Over < 4 ||
		got[1].AssetUID != "WAT-2" || len(got[1].Samples) != 0 {
		t.Fatalf("recovered %+v", got)
	}
}

// TestStopEndsTheMovesToIt: a stop by the survivor's uid ends the move
// that led to it, so a later survey of the survivor is not stopped by
// the merged-away uid (a review: it was, answering 200).
func TestStopEndsTheMovesToIt(t *testing.T) {
	r := newRig(t)
	r.e.Record("WAT-2", 1)
	r.e.Rename("WAT-2", "WAT-1") // WAT-2 merged into WAT-1: its survey moves
	if r.e.StopRecording("WAT-1") == nil {
		t.Fatal("the moved survey is not under the survivor")
	}
	r.e.Record("WAT-1", 2)
	if got := r.e.StopRecording("WAT-2"); got != nil {
		t.Fatalf("the merged-away uid stopped the survivor's new survey: %+v", got)
	}
	if r.e.StopRecording("WAT-1") == nil {
		t.Fatal("the survivor's survey is gone")
	}
}
