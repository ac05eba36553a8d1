package appliance_test

import (
	"testing"
	"time"

	"beaconhub/appliance/sensors"
	"beaconhub/store"
)

// TestALateReadingPagesNobody with a graceful restart between the
// kitchen's on-time 5 °C and the corridor's flush of the 12 °C it took
// 2 min ago. The gateway clock estimates survived the restart, the
// sensor's last judged reading did not, and the flush paged (a review):
// it starts at the latest stored reading now.
func TestALateReadingAfterARestartPagesNobody(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	for i := 0; i < 3; i++ {
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
		r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-30, 5))
		r.clk.Advance(20 * time.Second)
	}
	r.step(2 * time.Minute)
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
	r.restart()
	r.clk.Advance(10 * time.Second)
	r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-2*60_000, 12)) // queued 2 min ago, flushed on reconnect
	if n := len(r.msgs("sensors")); n != 0 || r.app.SensorConditions().IsActive(sensors.CondRange, "SEN-A1-1") {
		t.Fatalf("a late 12 °C reading of a fridge at 5 °C after a restart: sensors topic %q", condTitles(r, "sensors"))
	}
}

// The gateway clock estimates go through the writer lazily and survive
// a graceful restart: kitchen first after the restart, then the
// corridor's flush is late.
func TestGatewayClocksSurviveARestart(t *testing.T) {
	r := newCondRig(t, nil, func(db *store.DB) { condFridge(db, t) })
	for i := 0; i < 3; i++ {
		r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
		r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-30, 5))
		r.clk.Advance(20 * time.Second)
	}
	r.restart()
	r.step(2 * time.Minute)
	r.pub("AC233FA0B1C2", "adv1", condReading(r.clk.Now().UnixMilli()-20, 5))
	r.pub("AC233FA0B1C3", "adv1", condReading(r.clk.Now().UnixMilli()-2*60_000, 12))
	if n := len(r.msgs("sensors")); n != 0 {
		t.Fatalf("sensors topic %q", condTitles(r, "sensors"))
	}
}
