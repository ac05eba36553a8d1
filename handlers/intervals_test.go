package handlers

import (
	"net/http"
	"strings"
	"testing"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

func TestBeaconIntervalsPageThroughStoredIntervals(t *testing.T) {
	h := newAssetHarness(t)
	loc := h.location("Ward", "W1", 0)
	b := h.beacon(map[string]any{"mac": "C30000000B01", "name": "Watch", "type": "watch", "location_id": loc})
	add := func(from, n int) {
		if err := h.db.Update(func(tx *bolt.Tx) error {
			for i := from; i < from+n; i++ {
				// Closed stays, one after the other (a merge keeps the
				// source's that began after the survivor's last ended).
				if err := store.AppendZoneInterval(tx, b.AssetUID, &store.ZoneInterval{ZoneID: 1, Zone: "Z1", Enter: int64(i), Leave: int64(i) + 1}); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 35)
	type page struct {
		Intervals  []store.ZoneInterval `json:"intervals"`
		NextCursor *string              `json:"next_cursor"`
	}
	user := h.token("user")
	var p1, p2 page
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals", user).expect(t, http.StatusOK).decodePayload(t, &p1)
	if len(p1.Intervals) != 30 || p1.Intervals[0].Ordinal != 35 || p1.NextCursor == nil {
		t.Fatalf("first page: %d items, first %d, next %v", len(p1.Intervals), p1.Intervals[0].Ordinal, p1.NextCursor)
	}
	add(36, 3) // new intervals between pages
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?cursor="+*p1.NextCursor, user).expect(t, http.StatusOK).decodePayload(t, &p2)
	if len(p2.Intervals) != 5 || p2.Intervals[0].Ordinal != 5 || p2.Intervals[4].Ordinal != 1 || p2.NextCursor != nil {
		t.Fatalf("second page: %+v next %v", p2.Intervals, p2.NextCursor)
	}
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?limit=201", user).wantBad(t, "limit")
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?limit=0", user).wantBad(t, "limit")
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?cursor=-3", user).wantBad(t, "cursor")
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?cursor=0_39", user).wantBad(t, "cursor") // past the newest
	h.get("/api/v1/beacon/NOPE-1/intervals", user).expect(t, http.StatusNotFound)

	// A cursor belongs to its beacon's list: on another beacon's it is
	// refused, not read at the same position there.
	other := h.beacon(map[string]any{"mac": "C30000000B02", "name": "Spare", "type": "watch", "location_id": loc})
	if err := h.db.Update(func(tx *bolt.Tx) error {
		for i := range 40 {
			if err := store.AppendZoneInterval(tx, other.AssetUID, &store.ZoneInterval{ZoneID: 1, Zone: "Z1", Enter: int64(100 + i), Leave: int64(101 + i)}); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	r := h.get("/api/v1/beacon/"+other.AssetUID+"/intervals?cursor="+*p1.NextCursor, user)
	if r.wantBad(t, "cursor"); !strings.Contains(r.Message, "another beacon") {
		t.Fatalf("another beacon's cursor: %s", r.Body)
	}

	// A merge numbers the merged list afresh: a cursor from before it is
	// refused, not read at positions that now hold other intervals.
	h.send("POST", "/api/v1/beacon/"+b.AssetUID+"/merge", h.admin, map[string]any{"source_ids": []uint64{other.ID}}).expect(t, http.StatusOK)
	r = h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?cursor="+*p1.NextCursor, user)
	if r.wantBad(t, "cursor"); !strings.Contains(r.Message, "merge") {
		t.Fatalf("a cursor from before the merge: %s", r.Body)
	}
	var p3 page
	h.get("/api/v1/beacon/"+b.AssetUID+"/intervals?limit=200", user).expect(t, http.StatusOK).decodePayload(t, &p3)
	if len(p3.Intervals) != 78 {
		t.Fatalf("after the merge: %d intervals, want 78", len(p3.Intervals))
	}
}
