package handlers

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

type alertsPage struct {
	Alerts []struct {
		ID       uint64 `json:"id"`
		Status   string `json:"status"`
		AssetUID string `json:"asset_uid"`
		Test     bool   `json:"test"`
	} `json:"alerts"`
	NextAfterID uint64 `json:"next_after_id"`
}

func TestIntegrationAlertsAfterIDOldestFirst(t *testing.T) {
	h := newHarness(t)
	for i := 1; i <= 9; i++ {
		st := store.EventAlert
		if i%3 == 0 {
			st = store.EventWarning
		}
		seedEvent(t, h.db, store.Event{ID: uint64(i), Status: st, Type: "single", AssetUID: "PAN-1", Test: i == 4, CreatedAt: int64(i) * 1000})
	}
	tok := h.token("api")
	var p alertsPage
	// No after_id: newest first, and where to follow from.
	h.get("/api/v1/integration/alerts?limit=2", tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if len(p.Alerts) != 2 || p.Alerts[0].ID != 9 || p.NextAfterID != 9 {
		t.Fatalf("newest = %+v", p)
	}
	h.get("/api/v1/integration/alerts?after_id=0&status=alert&limit=3", tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if fmt.Sprint(ids3(p)) != "[1 2 5]" || p.NextAfterID != 5 {
		t.Fatalf("page 1 = %v next %d (test send 4 excluded)", ids3(p), p.NextAfterID)
	}
	h.get(fmt.Sprintf("/api/v1/integration/alerts?after_id=%d&status=alert&limit=3", p.NextAfterID), tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if fmt.Sprint(ids3(p)) != "[7 8]" || p.NextAfterID != 9 {
		t.Fatalf("page 2 = %v next %d", ids3(p), p.NextAfterID)
	}
	h.get("/api/v1/integration/alerts?after_id=9", tok).expect(t, http.StatusOK).decodePayload(t, &p)
	if len(p.Alerts) != 0 || p.NextAfterID != 9 {
		t.Fatalf("tail = %+v", p)
	}
	h.get("/api/v1/integration/alerts?after_id=0&include_test=true&since=4000&until=4000", h.token("admin")).expect(t, http.StatusOK).decodePayload(t, &p)
	if fmt.Sprint(ids3(p)) != "[4]" || !p.Alerts[0].Test {
		t.Errorf("include_test = %+v", p)
	}
	// A cursor past the newest id was never handed out (a database
	// restored from a backup): a 400, not silence until ids reach it (a
	// black-box check).
	if r := h.get("/api/v1/integration/alerts?after_id=99999", tok); r.Code != http.StatusBadRequest || !strings.Contains(r.Body, "newest event id 9") {
		t.Errorf("after_id past the newest: %d %s", r.Code, r.Body)
	}
	for _, q := range []string{"after_id=-1", "limit=1000", "include_test=x", "type=motionless"} {
		if r := h.get("/api/v1/integration/alerts?"+q, tok); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d", q, r.Code)
		}
	}
	if r := h.get("/api/v1/integration/alerts", h.token("user")); r.Code != http.StatusForbidden {
		t.Errorf("user role: %d", r.Code)
	}
}

func ids3(p alertsPage) []uint64 {
	var out []uint64
	for _, a := range p.Alerts {
		out = append(out, a.ID)
	}
	return out
}

// TestIntegrationAlertsPagingLosesNothingUnderConcurrentInserts follows
// the alerts with after_id while presses are ingested through the real
// pipeline, alerting service and group-commit writer: every event must be
// seen exactly once.
func TestIntegrationAlertsPagingLosesNothingUnderConcurrentInserts(t *testing.T) {
	h := newHarness(t)
	const beacons = 300
	err := h.db.SeedBeacons(beacons, func(i int) store.Beacon {
		return store.Beacon{AssetUID: fmt.Sprintf("PAN-A1-%d", i), MAC: fmt.Sprintf("C3%010X", i), Type: "panic", Name: "b", Active: true}
	})
	if err != nil {
		t.Fatal(err)
	}
	reg, err := assets.NewRegistry(h.db)
	if err != nil {
		t.Fatal(err)
	}
	w := store.NewWriter(h.db, store.WriterOptions{Logger: h.logger})
	pipe := ingest.New(ingest.Options{Registry: reg, Writer: w, Logger: h.logger})
	svc := alerting.New(alerting.Options{DB: h.db, Live: h.live, Logger: h.logger})
	if err := svc.Restore(); err != nil {
		t.Fatal(err)
	}
	pipe.AddSubscriber(svc)
	pipe.Start()
	defer w.Close()
	defer pipe.Close()

	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gw := fmt.Sprintf("AC233FA0B1C%d", g)
			for i := g; i < beacons; i += 3 {
				body := fmt.Sprintf(`{"reports":[{"mac":"C3%010X","rssi":-60,"beacon_is_pushed":true,"press":"single"}]}`, i)
				if err := pipe.HandlePublish(gw, "gw/"+gw+"/adv4", []byte(body), byte(i%2)); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	tok := h.token("api")
	seen := map[uint64]int{}
	var after uint64
	finished := false
	for rounds := 0; ; rounds++ {
		select {
		case <-done:
			if !finished {
				finished = true
				if err := w.Flush(); err != nil {
					t.Fatal(err)
				}
			}
		default:
		}
		var p alertsPage
		h.get(fmt.Sprintf("/api/v1/integration/alerts?after_id=%d&limit=7", after), tok).expect(t, http.StatusOK).decodePayload(t, &p)
		for _, a := range p.Alerts {
			seen[a.ID]++
			if a.ID <= after {
				t.Fatalf("id %d returned after %d", a.ID, after)
			}
		}
		if p.NextAfterID < after {
			t.Fatalf("next_after_id went back: %d < %d", p.NextAfterID, after)
		}
		after = p.NextAfterID
		if finished && len(p.Alerts) == 0 {
			break
		}
		if rounds > 100000 {
			t.Fatal("paging does not end")
		}
	}
	if len(seen) != beacons {
		t.Fatalf("saw %d distinct alerts, want %d", len(seen), beacons)
	}
	for id := uint64(1); id <= beacons; id++ {
		if seen[id] != 1 {
			t.Errorf("alert %d seen %d times", id, seen[id])
		}
	}
}
