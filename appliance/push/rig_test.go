package push

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/push/ntfytest"
	"beaconhub/appliance/status"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

var t0 = time.Date(2026, 3, 28, 10, 0, 0, 0, time.UTC)

type rig struct {
	t    *testing.T
	dir  string
	clk  *clock.Fake
	ntfy *ntfytest.Server
	live *config.Live
	db   *store.DB
	pub  *Publisher
	svc  *Service
	stop context.CancelFunc
	tr   *status.Transport
}

func newRig(t *testing.T, forceGo bool) *rig { return newRigWith(t, forceGo, nil) }

// newRigWith is newRig with tune applied to the configuration first (for
// the settings that cannot change at run time).
func newRigWith(t *testing.T, forceGo bool, tune func(*config.Config)) *rig {
	t.Helper()
	r := &rig{t: t, dir: t.TempDir(), clk: clock.NewFake(t0), ntfy: ntfytest.New()}
	t.Cleanup(r.ntfy.Close)
	r.ntfy.Set(func(s *ntfytest.Server) { s.Tokens = map[string]bool{"tk_publish": true} })
	cfg := config.Defaults(config.ActiveBrand())
	cfg.ServerID = "TST000"
	cfg.PushServerURL = r.ntfy.URL
	cfg.PushOpsServerURL = r.ntfy.URL
	cfg.PushOpsTopic = "beaconhub-ops"
	cfg.PushPublishToken = "tk_publish"
	if tune != nil {
		tune(cfg)
	}
	r.live = config.NewLive(cfg, nil, "")
	r.tr = status.NewTransport(status.Limits{Connect: time.Second, Total: time.Second}, forceGo)
	r.open()
	return r
}

// open (re)opens the store and starts a fresh service on it: a restart.
func (r *rig) open() {
	db, err := store.Open(filepath.Join(r.dir, "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		r.t.Fatal(err)
	}
	r.db = db
	r.pub = NewPublisher(r.live, r.clk, r.tr, nil, nil)
	if r.svc, err = New(r.live, r.clk, db, r.pub, nil); err != nil {
		r.t.Fatal(err)
	}
	r.svc.Identify = func(subject string) Device {
		switch subject {
		case "P1":
			return Device{Name: "Panic 1", MAC: "AABBCCDDEE01", AssetUID: "P1", Type: "panic"}
		case "W1":
			return Device{Name: "Watch 1", MAC: "AABBCCDDEE02", AssetUID: "W1", Type: "watch"}
		}
		return Device{Name: "Fridge " + subject, AssetUID: subject, Type: "sensor"}
	}
	r.svc.Alias = func(uid string) string {
		var cur string
		_ = db.ViewAssets(func(t *store.AssetTx) error {
			cur = t.Alias(uid)
			return nil
		})
		return cur
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.stop = cancel
	r.svc.Start(ctx)
	r.svc.Idle()
	r.t.Cleanup(r.close)
}

func (r *rig) close() {
	if r.db == nil {
		return
	}
	r.stop()
	<-r.svc.Done()
	_ = r.db.Close()
	r.db = nil
}

func (r *rig) restart() { r.close(); r.open() }

func (r *rig) advance(d time.Duration) {
	r.clk.Advance(d)
	r.svc.Idle()
}

func (r *rig) patch(kv map[string]any) {
	r.t.Helper()
	ch := map[string]json.RawMessage{}
	for k, v := range kv {
		b, _ := json.Marshal(v)
		ch[k] = b
	}
	if _, err := r.live.Patch(ch); err != nil {
		r.t.Fatal(err)
	}
}

func (r *rig) msgs(topic string) []ntfytest.Message {
	var out []ntfytest.Message
	for _, m := range r.ntfy.Messages() {
		if topic == "" || m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

func sensorRec(kind, subject, phase, msg string, at time.Time) store.SensorConditionRecord {
	return store.SensorConditionRecord{Key: kind + ":" + subject, Kind: kind, Subject: subject, Phase: phase, At: at.UnixMilli(), Since: at.UnixMilli(), Message: msg}
}

// sensor hands push a sensor condition transition the way the appliance
// does: committed to the store (which a start reconciles with) and heard.
// A recovery of a condition the store holds under its own key carries
// that condition's start, as the sensor monitor's do (tests build
// records with their own time as the start).
func (r *rig) sensor(rec store.SensorConditionRecord) {
	r.t.Helper()
	if rec.Phase == store.HealthResolved {
		conds, err := r.db.ActiveSensorConditions()
		if err != nil {
			r.t.Fatal(err)
		}
		for _, c := range conds {
			if c.Key == rec.Key {
				rec.Since = c.Since
			}
		}
	}
	if err := r.db.Update(func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, []store.SensorConditionRecord{rec}) }); err != nil {
		r.t.Fatal(err)
	}
	r.svc.OnSensor(rec)
}

// health does the same for a health transition.
func (r *rig) health(rec store.HealthRecord) {
	r.t.Helper()
	if _, err := r.db.ApplyHealth([]store.HealthRecord{rec}); err != nil {
		r.t.Fatal(err)
	}
	r.svc.OnHealth(rec)
}
