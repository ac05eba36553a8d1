package appliance_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/broker/brokertest"
)

// Spec "Integration API" rules: zone is null until the engine has seen
// the beacon (live state resets on restart); last_seen persists
// independently. A graceful restart must keep the last_seen served
// before it, and answer zone/map/since/updated null.
func TestGracefulRestartKeepsLastSeenAndNullsZone(t *testing.T) {
	home := t.TempDir()
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	app := rtlsApp(t, home, clk)
	c := &client{t: t, base: "http://" + app.HTTPAddr(), token: adminToken(t, app)}
	hallSite(c)
	publish := hallPublisher(t, app)
	locateInHall(t, app, clk, publish)
	clk.Advance(700 * time.Millisecond)
	publish()
	heard := clk.Now().UnixMilli()
	eventually(t, "the sighting reaches the engine", func() bool {
		l, _ := app.RTLS().Location("WCH-A1-1")
		return l.Updated == heard
	})
	type locT struct {
		Zone     any    `json:"zone"`
		Map      any    `json:"map"`
		Since    *int64 `json:"since"`
		Updated  *int64 `json:"updated"`
		LastSeen *int64 `json:"last_seen"`
	}
	var before locT
	c.must("GET", "/api/v1/integration/beacons/WCH-A1-1/location", nil, &before)
	if before.LastSeen == nil || *before.LastSeen != heard || before.Zone == nil {
		t.Fatalf("before restart %+v, want last_seen %d", before, heard)
	}
	clk.Advance(2 * time.Second)
	if err := app.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	_, c2 := restart(t, home, clk)
	var after locT
	c2.must("GET", "/api/v1/integration/beacons/WCH-A1-1/location", nil, &after)
	if after.Zone != nil || after.Map != nil || after.Since != nil || after.Updated != nil {
		t.Errorf("after restart zone etc. not null: %+v", after)
	}
	if after.LastSeen == nil || *after.LastSeen != heard {
		got := "null"
		if after.LastSeen != nil {
			got = itoa(uint64(*after.LastSeen))
		}
		t.Errorf("after a graceful restart last_seen %s, want %d (served before)", got, heard)
	}
	var tr struct {
		Located  bool `json:"located"`
		Location any  `json:"location"`
	}
	c2.must("GET", "/api/v1/tracking/WCH-A1-1", nil, &tr)
	if tr.Located || tr.Location != nil {
		t.Errorf("tracking after restart %+v", tr)
	}
	var page struct {
		Intervals []struct {
			Enter int64 `json:"enter"`
			Leave int64 `json:"leave"`
		} `json:"intervals"`
	}
	c2.must("GET", "/api/v1/user/rtls/beacons/WCH-A1-1/zone-intervals", nil, &page)
	if len(page.Intervals) != 1 || page.Intervals[0].Leave != heard {
		t.Errorf("intervals after restart %+v, want one closed at %d", page.Intervals, heard)
	}
}

// Gateway contract: a report MAC "12 hex digits, colons or dashes
// allowed, any case". A lowercase dashed MAC locates the beacon and
// moves last_seen as the canonical spelling does.
func TestReportMACSpellingsLocate(t *testing.T) {
	clk := clock.NewFake(time.Now().Truncate(time.Second))
	app := rtlsApp(t, t.TempDir(), clk)
	t.Cleanup(func() { _ = app.Shutdown(context.Background()) })
	c := &client{t: t, base: "http://" + app.HTTPAddr(), token: adminToken(t, app)}
	hallSite(c)
	cfg := app.Live().Get()
	deadline := time.Now().Add(15 * time.Second)
	for {
		brokertest.Pub(t, app.MQTTAddr(), cfg.MQTTUser, cfg.MQTTPass, "-q", "1", "-i", "AC233FA0B1C2", "-t", "gw/AC233FA0B1C2/adv4",
			"-m", `{"reports":[{"mac":"c3-00-00-00-0b-01","rssi":-58,"beacon_is_pushed":false}]}`)
		if l, ok := app.RTLS().Location("WCH-A1-1"); ok && l.Zone != 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a lowercase dashed MAC never located the beacon")
		}
		clk.Advance(time.Second)
	}
	var loc struct {
		LastSeen *int64 `json:"last_seen"`
		Zone     any    `json:"zone"`
	}
	if code := c.call("GET", "/api/v1/integration/beacons/WCH-A1-1/location", nil, "", &loc); code != http.StatusOK || loc.Zone == nil || loc.LastSeen == nil {
		t.Fatalf("%d %+v", code, loc)
	}
}

// A zone (or its map) deleted while a beacon is in it: the beacon is no
// longer located there (integration zone null, tracking located false)
// and its open stay is closed, not left open for ever naming a zone that
// no longer exists.
func TestDeletedZoneEndsTheStay(t *testing.T) {
	for _, what := range []string{"zone", "map"} {
		t.Run(what, func(t *testing.T) {
			app, clk, c, _ := trackedInHall(t)
			l, _ := app.RTLS().Location("WCH-A1-1")
			clk.Advance(3 * time.Second)
			path := "/api/v1/zone/" + itoa(l.Zone)
			if what == "map" {
				path = "/api/v1/map/" + itoa(l.MapID)
			}
			c.must("DELETE", path, nil, nil)
			var loc struct {
				Zone any `json:"zone"`
				Map  any `json:"map"`
			}
			c.must("GET", "/api/v1/integration/beacons/WCH-A1-1/location", nil, &loc)
			if loc.Zone != nil || loc.Map != nil {
				t.Errorf("after deleting its %s the beacon is still in %v / %v", what, loc.Zone, loc.Map)
			}
			var tr struct {
				Located bool `json:"located"`
			}
			c.must("GET", "/api/v1/tracking/WCH-A1-1", nil, &tr)
			if tr.Located {
				t.Errorf("tracking still located after deleting the %s", what)
			}
			if err := app.Writer().Flush(); err != nil {
				t.Fatal(err)
			}
			var page struct {
				Intervals []struct {
					ZoneID uint64 `json:"zone_id"`
					Leave  int64  `json:"leave"`
				} `json:"intervals"`
			}
			c.must("GET", "/api/v1/user/rtls/beacons/WCH-A1-1/zone-intervals", nil, &page)
			for _, iv := range page.Intervals {
				if iv.ZoneID == l.Zone && iv.Leave == 0 {
					t.Errorf("the stay in deleted %s's zone %d is still open: %+v", what, l.Zone, page.Intervals)
				}
			}
			var ov struct {
				Maps []struct {
					Located int `json:"located"`
				} `json:"maps"`
			}
			c.must("GET", "/api/v1/maps/overview", nil, &ov)
			for _, m := range ov.Maps {
				if m.Located != 0 {
					t.Errorf("overview still counts a located beacon: %+v", ov)
				}
			}
		})
	}
}
