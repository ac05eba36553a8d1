package push

import (
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/status"
	"beaconhub/store"
)

type recorder struct {
	mu    sync.Mutex
	codes []int
	tr    []string
}

func (r *recorder) RecordDelivery(_ time.Time, resp status.Response, _ error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.codes = append(r.codes, resp.Status)
	r.tr = append(r.tr, resp.Transport)
}

// TestRealPublishesFeedDeliveryProbe: every staff publish, failed or not,
// reaches the dashboard's delivery probe with the transport that ran;
// vendor ops copies do not.
func TestRealPublishesFeedDeliveryProbe(t *testing.T) {
	r := newRig(t, false)
	rec := &recorder{}
	r.pub.rec = rec
	r.ntfy.Set(func(s *ntfytest.Server) { s.FailStatus, s.FailN = 502, 1 })
	r.svc.OnEvent(store.Event{ID: 1, Status: "alert", BeaconType: "watch"})
	r.svc.Idle()
	r.advance(2 * time.Second)
	r.svc.OnHealth(store.HealthRecord{Key: "mqtt_down", Phase: "active", Message: "down"})
	r.svc.Idle()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.codes) != 3 || rec.codes[0] != 502 || rec.codes[1] != 200 || rec.codes[2] != 200 {
		t.Fatalf("probe saw %v", rec.codes)
	}
	if rec.tr[0] != r.tr.Name() {
		t.Fatalf("transport %v, want %s", rec.tr, r.tr.Name())
	}
}
