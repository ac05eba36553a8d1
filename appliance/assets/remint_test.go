package assets

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// legacyRow adds a beacon the way a pre-8.0 row arrives after the upgrade:
// type and home location known, uid LEGACY-<MAC>.
func (e *env) legacyRow(mac, typ string, loc uint64) string {
	e.t.Helper()
	b := &store.Beacon{MAC: mac, Name: mac, Type: typ, LocationID: loc, Active: true}
	if err := e.db.CreateBeacon(b); err != nil {
		e.t.Fatal(err)
	}
	if err := e.svc.Registry().Reload(); err != nil {
		e.t.Fatal(err)
	}
	return b.AssetUID
}

func (e *env) totalReadings() int {
	e.t.Helper()
	ss, err := e.db.HistorySeries()
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, s := range ss {
		n += s.Count
	}
	return n
}

func (e *env) legacyHistory() []string {
	e.t.Helper()
	ss, _ := e.db.HistorySeries()
	var out []string
	for _, s := range ss {
		if IsLegacy(s.UID) {
			out = append(out, s.UID)
		}
	}
	return out
}

func TestRemintPlanApplyLeavesNoMACKeys(t *testing.T) {
	e := newEnv(t)
	h := e.loc("Hospital", "H1", 0)
	w := e.loc("Wing", "W2", h)
	annex := e.loc("Annex", "", h)
	var mintable []string
	for i := 1; i <= 3; i++ {
		uid := e.legacyRow(fmt.Sprintf("C30000000A0%d", i), "sensor", w)
		e.readings(uid, 100, 200)
		mintable = append(mintable, uid)
	}
	unknown := e.legacyRow("C30000000A04", "unknown", w)
	uncoded := e.legacyRow("C30000000A05", "sensor", annex)
	gw := &store.Gateway{MAC: "AC233FA0B1C2", Name: "gw", LocationID: w}
	if err := e.db.CreateGateway(gw); err != nil {
		t.Fatal(err)
	}
	e.readings("C3:00:00:00:0A:01", 300) // history still keyed by a held MAC
	e.readings("c30000000f01", 400, 500) // ... and by a MAC nobody holds
	if err := e.db.Update(store.PutLastSeen(map[string]int64{mintable[0]: 250, "C30000000F01": 500})); err != nil {
		t.Fatal(err)
	}
	if f, _ := e.db.AuditMACKeys(); len(f) != 3 {
		t.Fatalf("audit before = %+v", f)
	}
	total := e.totalReadings()

	plan, err := e.svc.RemintPlan()
	if err != nil {
		t.Fatal(err)
	}
	if plan.Legacy != 6 || plan.Mintable != 4 || plan.Blocked != 2 || plan.Records[store.RewriterHistory] != 6 || plan.Records[store.RewriterLastSeen] != 1 || len(plan.MACKeyed) != 3 {
		t.Fatalf("plan = %+v", plan)
	}
	predicted := map[string]string{}
	for _, it := range plan.Assets {
		switch it.AssetUID {
		case unknown:
			if it.Blocked != "type is unknown" {
				t.Errorf("unknown type: %+v", it)
			}
		case uncoded:
			if !strings.Contains(it.Blocked, `"Annex"`) {
				t.Errorf("uncoded: %+v", it)
			}
		default:
			predicted[it.AssetUID] = it.NewUID
		}
	}

	res, err := e.svc.RemintApply()
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Reminted) != 4 || len(res.Blocked) != 3 || len(res.Adopted.Created) != 1 || res.Adopted.Renamed[store.RewriterHistory] != 3 {
		t.Fatalf("apply = %+v", res)
	}
	for _, d := range res.Reminted {
		if predicted[d.OldUID] != d.NewUID {
			t.Errorf("%s became %s, plan said %s", d.OldUID, d.NewUID, predicted[d.OldUID])
		}
	}
	if f, err := e.db.AuditMACKeys(); err != nil || len(f) != 0 {
		t.Errorf("audit after = %+v %v", f, err)
	}
	if got := e.history("SEN-H1W2-1"); len(got) != 3 {
		t.Errorf("SEN-H1W2-1 history = %v (its MAC-keyed reading adopted)", got)
	}
	if left := e.legacyHistory(); len(left) != 1 || left[0] != "LEGACY-C30000000F01" {
		t.Errorf("legacy history left = %v (only the adopted unknown device)", left)
	}
	if e.totalReadings() != total {
		t.Errorf("readings %d, want %d", e.totalReadings(), total)
	}
	e.resolves("C30000000A01", "SEN-H1W2-1")
	e.resolves("C30000000F01", "LEGACY-C30000000F01")
	m, _ := ParseMAC("AC233FA0B1C2")
	if a, ok := e.svc.Registry().Gateway(m); !ok || a.UID != "GW-H1W2-1" {
		t.Errorf("gateway = %+v", a)
	}
	seen, _ := e.db.LoadLastSeen()
	if seen["SEN-H1W2-1"] != 250 || seen["LEGACY-C30000000F01"] != 500 || len(e.mem.renames) != 8 { // last seen and recorder
		t.Errorf("last seen = %v, renames %v", seen, e.mem.renames)
	}
	if again, _ := e.svc.RemintPlan(); again.Mintable != 0 || again.Legacy != 3 {
		t.Errorf("plan after apply = %+v", again)
	}
}

func TestRemintApplySurvivesCrashAndResumes(t *testing.T) {
	e := newEnv(t)
	w := e.loc("Wing", "W2", 0)
	var uids []string
	for i := 0; i < 5; i++ {
		uid := e.legacyRow(fmt.Sprintf("C30000000B0%d", i), "panic", w)
		e.readings(uid, int64(100*i+1), int64(100*i+2))
		uids = append(uids, uid)
	}
	total := e.totalReadings()
	crash := errors.New("power cut")
	e.svc.remintHook = func(n int) error {
		if n == 2 {
			return crash // inside the third asset's transaction, after its rewrite
		}
		return nil
	}
	res, err := e.svc.RemintApply()
	if !errors.Is(err, crash) || len(res.Reminted) != 2 {
		t.Fatalf("apply with crash = %+v %v", res, err)
	}
	e.restart()
	// Every asset is entirely old or entirely new.
	for i, uid := range uids {
		v, err := e.svc.Beacon(uid)
		if err != nil {
			t.Fatal(err)
		}
		old, now := len(e.history(uid)), len(e.history(v.AssetUID))
		if i < 2 && (v.AssetUID != fmt.Sprintf("PAN-W2-%d", i+1) || now != 2 || old != 0) {
			t.Errorf("asset %d: %s, %d readings, %d under old", i, v.AssetUID, now, old)
		}
		if i >= 2 && (v.AssetUID != uid || old != 2) {
			t.Errorf("asset %d rolled back partly: %s, %d readings", i, v.AssetUID, old)
		}
		e.resolves(fmt.Sprintf("C30000000B0%d", i), v.AssetUID)
	}
	if plan, _ := e.svc.RemintPlan(); plan.Mintable != 3 || plan.Assets[0].NewUID != "PAN-W2-3" {
		t.Errorf("plan after crash = %+v", plan)
	}
	res, err = e.svc.RemintApply()
	if err != nil || len(res.Reminted) != 3 {
		t.Fatalf("resume = %+v %v", res, err)
	}
	if left := e.legacyHistory(); len(left) != 0 || e.totalReadings() != total {
		t.Errorf("after resume: legacy history %v, %d readings (want %d)", left, e.totalReadings(), total)
	}
	if f, _ := e.db.AuditMACKeys(); len(f) != 0 {
		t.Errorf("audit = %+v", f)
	}
}

// A reading resolved against the old cache can land under the former uid
// after the remint committed; the sweep moves it, and apply re-sweeps.
func TestRemintSweepsLateWrites(t *testing.T) {
	e := newEnv(t)
	w := e.loc("Wing", "W2", 0)
	uid := e.legacyRow("C30000000C01", "sensor", w)
	if _, err := e.svc.RemintApply(); err != nil {
		t.Fatal(err)
	}
	e.readings(uid, 900) // the late write
	if err := e.db.Update(func(tx *bolt.Tx) error { return store.PutLastSeen(map[string]int64{uid: 900})(tx) }); err != nil {
		t.Fatal(err)
	}
	plan, _ := e.svc.RemintPlan()
	if plan.Stray[store.RewriterHistory] != 1 || plan.Stray[store.RewriterLastSeen] != 1 {
		t.Fatalf("stray = %+v", plan.Stray)
	}
	res, err := e.svc.RemintApply()
	if err != nil || res.Swept[store.RewriterHistory] != 1 {
		t.Fatalf("sweep = %+v %v", res, err)
	}
	if got := e.history("SEN-W2-1"); len(got) != 1 {
		t.Errorf("swept history = %v", got)
	}
}

// preFollower records, for each PrepareRename, which uid the registry
// resolved the beacon's MAC to at that moment.
type preFollower struct {
	reg     *Registry
	mac     [6]byte
	resolve []string
	renamed [][2]string
}

func (f *preFollower) PrepareRename(oldUID, newUID string) {
	a, _ := f.reg.Beacon(f.mac)
	f.resolve = append(f.resolve, a.UID)
}
func (f *preFollower) Rename(o, n string) { f.renamed = append(f.renamed, [2]string{o, n}) }

// TestPrepareRenameRunsBeforeTheReload: a follower that must be reachable
// under the new uid (alerting's windows) is told while the registry still
// resolves the MAC to the old uid, then renamed as usual.
func TestPrepareRenameRunsBeforeTheReload(t *testing.T) {
	e := newEnv(t)
	w := e.loc("Wing", "W2", 0)
	old := e.legacyRow("C30000000C01", "sensor", w)
	mac, _ := ParseMAC("C30000000C01")
	f := &preFollower{reg: e.svc.Registry(), mac: mac}
	e.svc.Connect(IngestHooks{LastSeen: e.mem, Recorder: e.mem, Discovery: e.disc, Followers: []Renamer{f}})
	if _, err := e.svc.RemintApply(); err != nil {
		t.Fatal(err)
	}
	if len(f.resolve) != 1 || f.resolve[0] != old {
		t.Fatalf("PrepareRename saw the MAC resolve to %v, want the old uid %s", f.resolve, old)
	}
	if len(f.renamed) != 1 || f.renamed[0] != [2]string{old, "SEN-W2-1"} {
		t.Fatalf("renames %v", f.renamed)
	}
	e.resolves("C30000000C01", "SEN-W2-1")
}
