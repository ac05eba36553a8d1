package handlers

import (
	"encoding/json"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/appliance/status"
	"beaconhub/appliance/status/pushtest"
	"beaconhub/broker"
	"beaconhub/web"
)

// monitorHarness is a harness whose server has a real status monitor over
// a fake push server and a fake broker listener.
func monitorHarness(t *testing.T) *harness {
	t.Helper()
	push := pushtest.New()
	t.Cleanup(push.Close)
	h := newHarness(t, withConfig(func(c *config.Config) { c.PushServerURL = push.URL }))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	conds, err := status.NewConditions(h.db, h.clock, h.logger)
	if err != nil {
		t.Fatal(err)
	}
	mon := status.NewMonitor(status.Options{Live: h.live, Clock: h.clock, Logger: h.logger, Conditions: conds,
		MQTT: func() broker.Stats {
			return broker.Stats{Mode: "embedded", Listening: true, Listen: ln.Addr().String()}
		},
		Push: status.NewPush(h.live, h.clock, status.NewTransport(status.Limits{Total: 2 * time.Second}, false), conds),
		Fleet: func() ([]status.FleetAsset, error) {
			return []status.FleetAsset{{UID: "GW-1", Kind: "gateway"}, {UID: "PAN-1", Kind: "beacon", Type: "panic"}}, nil
		},
	})
	t.Cleanup(mon.Stop)
	h.srv = New(Deps{Live: h.live, DB: h.db, Auth: h.auth, AppLog: h.applog, Logger: h.logger, Static: web.FS(), Monitor: mon})
	return h
}

func keys(m map[string]json.RawMessage) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

func TestStatusEndpoints(t *testing.T) {
	h := monitorHarness(t)
	user, admin := h.token("user"), h.token("admin")

	r := h.get("/api/v1/status/dashboard", user).expect(t, http.StatusOK)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("dashboard Cache-Control = %q", r.Header.Get("Cache-Control"))
	}
	var d map[string]json.RawMessage
	r.decodePayload(t, &d)
	if got := keys(d); got != "alertsys,fleet,generated_at,issues,issues_total,mqtt,ok,push" {
		t.Errorf("dashboard keys = %s", got)
	}
	// The MQTT error fields are there, null, before any error, as in
	// /status/mqtt (they were left out: a black-box check).
	var mq map[string]json.RawMessage
	if err := json.Unmarshal(d["mqtt"], &mq); err != nil {
		t.Fatal(err)
	}
	if string(mq["last_error"]) != "null" || string(mq["last_error_at"]) != "null" {
		t.Errorf("dashboard mqtt %s: want last_error and last_error_at null", d["mqtt"])
	}
	var push map[string]json.RawMessage
	_ = json.Unmarshal(d["push"], &push)
	if got := keys(push); got != "delivery,message,ok,reachability" {
		t.Errorf("push keys = %s", got)
	}
	for _, probe := range []string{"reachability", "delivery"} {
		var p map[string]json.RawMessage
		_ = json.Unmarshal(push[probe], &p)
		if got := keys(p); got != "checked_at,duration_ms,error_code,http_status,message,ok,transport" {
			t.Errorf("%s keys = %s", probe, got)
		}
	}

	r = h.send("POST", "/api/v1/status/recheck", admin, map[string]string{"target": "push"}).expect(t, http.StatusOK)
	if r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("recheck Cache-Control = %q", r.Header.Get("Cache-Control"))
	}
	var rd status.Dashboard
	r.decodePayload(t, &rd)
	if rd.Rechecked != "push" || !rd.Push.Reachability.OK || !rd.Push.Delivery.OK || rd.Push.Delivery.CheckedAt == nil {
		t.Errorf("recheck push = %+v", rd.Push)
	}
	r = h.send("POST", "/api/v1/status/recheck", admin, map[string]string{"target": "mqtt"}).expect(t, http.StatusOK)
	r.decodePayload(t, &rd)
	if !rd.MQTT.OK || rd.MQTT.CheckedAt == nil || rd.MQTT.Mode != "embedded" {
		t.Errorf("recheck mqtt = %+v", rd.MQTT)
	}
	h.send("POST", "/api/v1/status/recheck", admin, map[string]string{"target": "alertsys"}).expect(t, http.StatusServiceUnavailable)
	h.send("POST", "/api/v1/status/recheck", admin, map[string]string{"target": "dns"}).expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/status/recheck", admin, `{"target":"push","extra":1}`).expect(t, http.StatusBadRequest)
	h.send("POST", "/api/v1/status/recheck", user, map[string]string{"target": "push"}).expect(t, http.StatusForbidden)

	r = h.get("/api/v1/status/alertsys", user).expect(t, http.StatusOK)
	var as status.AlertsysSnapshot
	r.decodePayload(t, &as)
	if as.State != "disabled" || as.Enabled || r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("alertsys = %+v", as)
	}
	if r := h.get("/api/v1/status/mqtt", user); r.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("mqtt Cache-Control = %q", r.Header.Get("Cache-Control"))
	}
}

func TestStatusWithoutMonitor(t *testing.T) {
	h := newHarness(t)
	h.get("/api/v1/status/dashboard", h.token("user")).expect(t, http.StatusServiceUnavailable)
	h.send("POST", "/api/v1/status/recheck", h.token("admin"), map[string]string{"target": "mqtt"}).expect(t, http.StatusServiceUnavailable)
}
