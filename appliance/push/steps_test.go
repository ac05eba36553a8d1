package push

// Steps the push scenarios share: one piece of setup per scenario, so a
// change to the cadence rules (or to how the appliance hands push a
// transition) is edited here once, not in every test that walks it.

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/push/ntfytest"

	bolt "go.etcd.io/bbolt"
)

// outOfRange: fridge subject reads temp °C, outside its 2..8 range (an
// active range:subject); the worker is let finish.
func (r *rig) outOfRange(subject, temp string) {
	r.t.Helper()
	r.sensor(sensorRec("range", subject, "active", "temperature "+temp+" °C outside 2..8", r.clk.Now()))
	r.svc.Idle()
}

// backInRange resolves range:subject ("back in range"); the worker is
// let finish.
func (r *rig) backInRange(subject string) {
	r.t.Helper()
	r.sensor(sensorRec("range", subject, "resolved", "back in range", r.clk.Now()))
	r.svc.Idle()
}

// batteryLow: subject's battery reads mv (an active battery:subject);
// the worker is let finish.
func (r *rig) batteryLow(subject string, mv int) {
	r.t.Helper()
	r.sensor(sensorRec("battery", subject, "active", fmt.Sprintf("battery %d mV", mv), r.clk.Now()))
	r.svc.Idle()
}

// batteryReplaced resolves battery:subject (now reading mv); the worker
// is let finish.
func (r *rig) batteryReplaced(subject string, mv int) {
	r.t.Helper()
	r.sensor(sensorRec("battery", subject, "resolved", fmt.Sprintf("battery %d mV", mv), r.clk.Now()))
	r.svc.Idle()
}

// minutes advances the fake clock n times by one minute (every timer
// due on the way fires at its minute, not all at the end).
func (r *rig) minutes(n int) {
	for i := 0; i < n; i++ {
		r.advance(time.Minute)
	}
}

// rename moves old's records onto nu in the store and hands push the
// uid change as a merge or remint does (with prepare, first the
// PrepareRename the appliance sends before its reload), then lets the
// worker finish.
func (r *rig) rename(old, nu string, prepare bool) {
	r.t.Helper()
	mergeInStore(r.t, r, old, nu)
	if prepare {
		r.svc.PrepareRename(old, nu)
	}
	r.svc.Rename(old, nu)
	r.svc.RenamesDone()
	r.svc.Idle()
}

// batteries is a newRigWith tune: the batteries category in mode
// ("individual" or "bulk") with a repeat/digest interval in seconds.
func batteries(mode string, interval int) func(*config.Config) {
	return func(c *config.Config) { c.PushBatteriesMode, c.PushBatteriesIntervalSeconds = mode, interval }
}

// said is staff's last word about subject in msgs (lastWordOf), logging
// the messages that said something about it.
func said(t *testing.T, msgs []ntfytest.Message, subject string) (string, []string) {
	t.Helper()
	w, log := lastWordOf(msgs, subject)
	t.Logf("%s: %q", subject, log)
	return w, log
}

// fleetNames names n fridges (F000, F001, ...) and the uids a remint
// gives them (SEN-000, ...).
func fleetNames(n int) (old, nu []string) {
	for i := 0; i < n; i++ {
		old = append(old, fmt.Sprintf("F%03d", i))
		nu = append(nu, fmt.Sprintf("SEN-%03d", i))
	}
	return old, nu
}

// fleetOutOfRange: n fridges (fleetNames) go out of range at once (12 °C)
// and are announced; it returns 10 min later with their names.
func (r *rig) fleetOutOfRange(n int) (old, nu []string) {
	r.t.Helper()
	old, nu = fleetNames(n)
	for _, f := range old {
		r.sensor(sensorRec("range", f, "active", "temperature 12.00 °C outside 2..8", r.clk.Now()))
	}
	r.svc.Idle()
	r.advance(10 * time.Minute)
	return old, nu
}

// crashSnapshot copies r's store as a crash now would leave it (what is
// committed, nothing more) into a new directory, and returns that.
func crashSnapshot(t *testing.T, r *rig) string {
	t.Helper()
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "service.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.db.Bolt().View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(f); return err }); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}
