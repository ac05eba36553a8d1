package handlers

import (
	"encoding/json"
	"net/http"
	"testing"

	"beaconhub/appliance/assets"
	"beaconhub/store"
	"beaconhub/web"

	bolt "go.etcd.io/bbolt"
)

// assetHarness is the shared harness with the asset registry wired in,
// the way the appliance wires it when no ingest pipeline runs (the
// discovery list then comes from the store).
type assetHarness struct {
	*harness
	reg   *assets.Service
	admin string
}

func newAssetHarness(t *testing.T) *assetHarness {
	t.Helper()
	h := newHarness(t)
	reg, err := assets.NewService(assets.Options{DB: h.db, Clock: h.clock, Logger: h.logger})
	if err != nil {
		t.Fatal(err)
	}
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Assets: reg})
	return &assetHarness{harness: h, reg: reg, admin: h.token("admin")}
}

// post sends body as the admin and fails unless the status is want.
func (h *assetHarness) post(path string, body any, want int) *response {
	h.t.Helper()
	return h.send("POST", path, h.admin, body).expect(h.t, want)
}

func (h *assetHarness) adminGet(path string, want int) *response {
	h.t.Helper()
	return h.get(path, h.admin).expect(h.t, want)
}

// location creates a location and returns its id.
func (h *assetHarness) location(name, code string, parent uint64) uint64 {
	h.t.Helper()
	body := map[string]any{"name": name, "parent_id": parent}
	if code != "" {
		body["code"] = code
	}
	var l assets.LocationView
	h.post("/api/v1/locations", body, http.StatusCreated).decodePayload(h.t, &l)
	return l.ID
}

func (h *assetHarness) beacon(body map[string]any) assets.BeaconView {
	h.t.Helper()
	var b assets.BeaconView
	h.post("/api/v1/beacons", body, http.StatusCreated).decodePayload(h.t, &b)
	return b
}

// snapshot renders every registry record, so a refused request can be
// shown to have written nothing.
func (h *assetHarness) snapshot() string {
	h.t.Helper()
	out := map[string]any{}
	err := h.db.ViewAssets(func(t *store.AssetTx) error {
		var bs []store.Beacon
		var gs []store.Gateway
		var ls []store.Location
		var ds []store.Device
		var as []store.Assignment
		_ = t.EachBeacon(func(b *store.Beacon) error { bs = append(bs, *b); return nil })
		_ = t.EachGateway(func(g *store.Gateway) error { gs = append(gs, *g); return nil })
		_ = t.EachLocation(func(l *store.Location) error { ls = append(ls, *l); return nil })
		_ = t.EachDevice(func(d *store.Device) error { ds = append(ds, *d); return nil })
		_ = t.EachAssignment(func(a *store.Assignment) error { as = append(as, *a); return nil })
		out["beacons"], out["gateways"], out["locations"], out["devices"], out["assignments"] = bs, gs, ls, ds, as
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	ss, _ := h.db.HistorySeries()
	out["history"] = ss
	data, _ := json.Marshal(out)
	return string(data)
}

// readings stores temperature readings under uid.
func (h *assetHarness) readings(uid string, ts ...int64) {
	h.t.Helper()
	var rs []store.Reading
	for _, x := range ts {
		rs = append(rs, store.Reading{UID: uid, Metric: store.MetricTemperature, TS: x, Value: 4.5})
	}
	if err := h.db.Update(func(tx *bolt.Tx) error { _, err := store.PutReadings(tx, rs); return err }); err != nil {
		h.t.Fatal(err)
	}
}

func (h *assetHarness) countHistory(uid string) int {
	h.t.Helper()
	n := 0
	_ = h.db.ViewAssets(func(t *store.AssetTx) error { n, _ = t.HistoryCount(uid, 0, 1<<62); return nil })
	return n
}

// wantBad fails unless r is a 400 naming field ("" = any or none).
func (r *response) wantBad(t *testing.T, field string) {
	t.Helper()
	r.expect(t, http.StatusBadRequest)
	if r.Type != "error" || r.Message == "" {
		t.Fatalf("not an error envelope: %s", r.Body)
	}
	if field == "" {
		return
	}
	var p struct {
		Field string `json:"field"`
	}
	_ = json.Unmarshal(r.Payload, &p)
	if p.Field != field {
		t.Fatalf("field %q, want %q; body %s", p.Field, field, r.Body)
	}
}
