package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func mkEvent(id uint64, uid, status string, at int64) Event {
	return Event{ID: id, Status: status, Type: "single", AssetUID: uid, MAC: "C3000000B001",
		Gateway: "AC233FA0B1C2", Gateways: []string{"AC233FA0B1C2"}, Reports: 1, CreatedAt: at, UpdatedAt: at}
}

func insertEvents(t *testing.T, db *DB, evs ...Event) {
	t.Helper()
	for _, e := range evs {
		if err := db.Update(InsertEvent(e, 0, nil, nil)); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(evs []Event) []uint64 {
	out := make([]uint64, 0, len(evs))
	for _, e := range evs {
		out = append(out, e.ID)
	}
	return out
}

func TestInsertEventFillsPlacesAndNotifiesOnCommit(t *testing.T) {
	db, _ := regOpen(t)
	regUpdate(t, db, func(x *AssetTx) error {
		site := &Location{Name: "Site", Code: "S"}
		if err := x.PutLocation(site); err != nil {
			return err
		}
		ward := &Location{Name: "Ward B", Code: "WB", ParentID: site.ID}
		if err := x.PutLocation(ward); err != nil {
			return err
		}
		if err := x.PutBeacon(&Beacon{AssetUID: "PAN-S-1", MAC: "C3000000B001", Type: "panic", LocationID: ward.ID, Active: true}); err != nil {
			return err
		}
		return x.PutGateway(&Gateway{AssetUID: "GW-S-1", MAC: "AC233FA0B1C2", LocationID: site.ID})
	})
	var got []Event
	e := mkEvent(7, "PAN-S-1", EventAlert, 1000)
	e.AssetID = 1
	press := &PressReport{Gateway: "AC233FA0B1C2", RSSI: -60, Press: "single", ReceivedAt: 1000}
	if err := db.Update(InsertEvent(e, 1, press, func(ev Event) { got = append(got, ev) })); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Location != "Site / Ward B" || got[0].GatewayLocation != "Site" || got[0].LocationID != 2 {
		t.Fatalf("commit callback got %+v", got)
	}
	if seq, _ := db.EventSequence(); seq != 7 {
		t.Errorf("sequence = %d, want 7", seq)
	}
	a, err := db.GetButtonAudit("PAN-S-1", 7)
	if err != nil || len(a.Reports) != 1 || a.Anchor != 1000 {
		t.Fatalf("audit = %+v, %v", a, err)
	}
}

func TestOnCommitNotCalledOnRollback(t *testing.T) {
	db := openTemp(t)
	called := 0
	err := db.Update(func(tx *bolt.Tx) error {
		if err := InsertEvent(mkEvent(1, "U", EventAlert, 1), 0, nil, func(Event) { called++ })(tx); err != nil {
			return err
		}
		return fmt.Errorf("forced rollback")
	})
	if err == nil || called != 0 {
		t.Fatalf("err %v, called %d", err, called)
	}
	if _, err := db.GetEvent(1); err != ErrNotFound {
		t.Errorf("rolled back event is stored: %v", err)
	}
}

func TestMergeEventAndAudit(t *testing.T) {
	db := openTemp(t)
	e := mkEvent(1, "PAN-1", EventAlert, 1000)
	e.RSSI = -70
	if err := db.Update(InsertEvent(e, 0, &PressReport{Gateway: "G1", RSSI: -70, ReceivedAt: 1000}, nil)); err != nil {
		t.Fatal(err)
	}
	for i, gw := range []string{"G2", "G3", "G2"} {
		m := EventMerge{Gateway: gw, RSSI: -50 - i, At: int64(1100 + i), Reports: 2 + i,
			Press: &PressReport{Gateway: gw, RSSI: -50 - i, ReceivedAt: int64(1100 + i)}}
		if err := db.Update(MergeEvent(1, m)); err != nil {
			t.Fatal(err)
		}
	}
	// Merging into a missing event (its insert failed) is an error that
	// says so, and writes nothing.
	if err := db.Update(MergeEvent(99, EventMerge{Gateway: "G9"})); !errors.Is(err, ErrEventNotStored) {
		t.Fatalf("merge into a missing event: %v", err)
	}
	if _, err := db.GetEvent(99); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the merge created event 99: %v", err)
	}
	got, err := db.GetEvent(1)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got.Gateways) != "[AC233FA0B1C2 G2 G3]" || got.Reports != 4 || got.RSSI != -50 || got.UpdatedAt != 1102 {
		t.Errorf("merged event = %+v", got)
	}
	a, _ := db.GetButtonAudit("PAN-1", 1)
	if len(a.Reports) != 4 {
		t.Errorf("audit reports = %d, want 4", len(a.Reports))
	}
	if err := db.Update(SetEventAlertsys(1, AlertsysSent, "convened", 2000)); err != nil {
		t.Fatal(err)
	}
	got, _ = db.GetEvent(1)
	if got.Alertsys != AlertsysSent || got.AlertsysMessage != "convened" || got.UpdatedAt != 2000 {
		t.Errorf("alertsys state = %+v", got)
	}
}

func TestListEventsFiltersAndCursor(t *testing.T) {
	db := openTemp(t)
	var all []Event
	for i := 1; i <= 30; i++ {
		st := EventAlert
		if i%3 == 0 {
			st = EventWarning
		}
		uid := "A"
		if i%2 == 0 {
			uid = "B"
		}
		all = append(all, mkEvent(uint64(i), uid, st, int64(i*1000)))
	}
	insertEvents(t, db, all...)

	// Page through everything newest first, 7 at a time.
	var seen []uint64
	var cur EventCursor
	for pages := 0; ; pages++ {
		page, next, err := db.ListEvents(EventFilter{}, cur, 7, 0)
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ids(page)...)
		if next == nil {
			break
		}
		cur = *next
		if pages > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != 30 || seen[0] != 30 || seen[29] != 1 {
		t.Fatalf("paged ids = %v", seen)
	}
	// Exactly a page's worth left: no promise of a further page.
	if _, next, _ := db.ListEvents(EventFilter{}, EventCursor{}, 30, 0); next != nil {
		t.Errorf("next = %+v on an exhausted history", next)
	}

	f := EventFilter{AssetUID: "B", Status: EventWarning, Since: 6000, Until: 24000}
	page, _, err := db.ListEvents(f, EventCursor{}, 100, 0)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(ids(page)) != "[24 18 12 6]" {
		t.Errorf("filtered = %v", ids(page))
	}
	// A tiny scan budget returns a short page with a cursor that resumes.
	page, next, _ := db.ListEvents(EventFilter{Status: EventWarning}, EventCursor{}, 100, 4)
	if fmt.Sprint(ids(page)) != "[30 27]" || next == nil {
		t.Fatalf("budgeted = %v next %+v", ids(page), next)
	}
	page, _, _ = db.ListEvents(EventFilter{Status: EventWarning}, *next, 100, 4)
	if fmt.Sprint(ids(page)) != "[24]" {
		t.Errorf("resumed = %v", ids(page))
	}
}

func TestEventsAfterOldestFirst(t *testing.T) {
	db := openTemp(t)
	for i := 1; i <= 10; i++ {
		st := EventAlert
		if i%2 == 0 {
			st = EventWarning
		}
		insertEvents(t, db, mkEvent(uint64(i), "A", st, int64(i)))
	}
	page, last, err := db.EventsAfter(EventFilter{Status: EventAlert}, 2, 3, 0)
	if err != nil || fmt.Sprint(ids(page)) != "[3 5 7]" || last != 7 {
		t.Fatalf("page %v last %d err %v", ids(page), last, err)
	}
	page, last, _ = db.EventsAfter(EventFilter{Status: EventAlert}, last, 3, 0)
	if fmt.Sprint(ids(page)) != "[9]" || last != 10 {
		t.Fatalf("page %v last %d", ids(page), last)
	}
	page, last, _ = db.EventsAfter(EventFilter{}, 10, 3, 0)
	if len(page) != 0 || last != 10 {
		t.Fatalf("tail page %v last %d", ids(page), last)
	}
}

func TestEventsAndAuditFollowUIDRename(t *testing.T) {
	db, _ := regOpen(t)
	insertEvents(t, db, mkEvent(1, "LEGACY-C3000000B001", EventAlert, 10), mkEvent(2, "OTHER", EventAlert, 20))
	if err := db.Update(MergeEvent(1, EventMerge{Gateway: "G2", Reports: 2, Press: &PressReport{Gateway: "G2"}})); err != nil {
		t.Fatal(err)
	}
	regUpdate(t, db, func(x *AssetTx) error {
		c, err := x.CountUID("LEGACY-C3000000B001")
		if err != nil || c[RewriterEvents] != 1 || c[RewriterButtonAudit] != 1 {
			t.Errorf("counts = %v %v", c, err)
		}
		moved, err := x.RenameUID("LEGACY-C3000000B001", "PAN-A1-1")
		if err != nil || moved[RewriterEvents] != 1 || moved[RewriterButtonAudit] != 1 {
			t.Errorf("moved = %v %v", moved, err)
		}
		return nil
	})
	page, _, _ := db.ListEvents(EventFilter{AssetUID: "PAN-A1-1"}, EventCursor{}, 10, 0)
	if len(page) != 1 || page[0].AssetUID != "PAN-A1-1" {
		t.Errorf("renamed events = %+v", page)
	}
	if page, _, _ := db.ListEvents(EventFilter{AssetUID: "LEGACY-C3000000B001"}, EventCursor{}, 10, 0); len(page) != 0 {
		t.Errorf("old uid still has events: %+v", page)
	}
	if a, err := db.GetButtonAudit("PAN-A1-1", 1); err != nil || a.AssetUID != "PAN-A1-1" {
		t.Errorf("audit after rename = %+v %v", a, err)
	}
	if list, _ := db.ListButtonAudits("PAN-A1-1", 10); len(list) != 1 {
		t.Errorf("audits = %+v", list)
	}
	findings, err := db.AuditMACKeys()
	if err != nil || len(findings) != 0 {
		t.Errorf("findings = %+v %v", findings, err)
	}
}

func TestRecentEvents(t *testing.T) {
	db := openTemp(t)
	insertEvents(t, db, mkEvent(1, "A", EventAlert, 100), mkEvent(2, "A", EventAlert, 200), mkEvent(3, "B", EventWarning, 300))
	got, err := db.RecentEvents(200)
	if err != nil || fmt.Sprint(ids(got)) != "[2 3]" {
		t.Errorf("recent = %v %v", ids(got), err)
	}
}

func TestHealthTransitionsPersist(t *testing.T) {
	db, path := regOpen(t)
	recs, err := db.ApplyHealth([]HealthRecord{
		{Key: "mqtt_down", Phase: HealthActive, At: 10, Since: 10, Message: "listener down"},
		{Key: "fleet:stale:GW-1", Phase: HealthActive, At: 10, Since: 10},
	})
	if err != nil || recs[0].ID != 1 || recs[1].ID != 2 {
		t.Fatalf("apply = %+v %v", recs, err)
	}
	if _, err := db.ApplyHealth([]HealthRecord{{Key: "mqtt_down", Phase: HealthResolved, At: 20, Since: 10}}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = Open(path, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	active, _ := db.ActiveHealth()
	if len(active) != 1 || active[0].Key != "fleet:stale:GW-1" {
		t.Errorf("active = %+v", active)
	}
	log, _ := db.HealthRecords(0, 10)
	if len(log) != 3 || log[2].Phase != HealthResolved || log[2].Key != "mqtt_down" {
		t.Errorf("log = %+v", log)
	}
}

// TestPendingAlertsysIndex: the restart recovery reads the presses still
// pending for alertsys from an index, at any age; the index follows
// inserts, state changes and retention, and the migration builds it from
// events an older version stored.
func TestPendingAlertsysIndex(t *testing.T) {
	db, path := regOpen(t)
	pend := func(e Event) Event { e.Alertsys = AlertsysPending; return e }
	insertEvents(t, db, pend(mkEvent(1, "A", EventAlert, 100)), mkEvent(2, "A", EventAlert, 200),
		pend(mkEvent(3, "B", EventAlert, 300)), pend(mkEvent(4, "B", EventAlert, 5000)))
	want := func(s string) {
		t.Helper()
		got, err := db.PendingAlertsysEvents()
		if err != nil || fmt.Sprint(ids(got)) != s {
			t.Fatalf("pending = %v %v, want %s", ids(got), err, s)
		}
	}
	want("[1 3 4]")
	if err := db.Update(SetEventAlertsys(3, AlertsysSent, "", 400)); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(SetEventAlertsys(4, AlertsysPending, "", 5100)); err != nil {
		t.Fatal(err)
	}
	want("[1 4]")
	if err := db.Update(func(tx *bolt.Tx) error { _, _, err := DeleteEventsBefore(tx, 0, 150, 100); return err }); err != nil {
		t.Fatal(err)
	}
	want("[4]")

	// A database from before the index: the step re-runs and finds event 4.
	_ = db.Close()
	b, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Update(func(tx *bolt.Tx) error { return tx.DeleteBucket(bEventsPending) }); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	writeSchemaVersion(t, path, stepBefore(t, "events still pending"))
	if db, err = Open(path, OpenOptions{LockTimeout: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	want("[4]")
}
