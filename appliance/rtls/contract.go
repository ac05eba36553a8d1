// Package rtls is the tracking engine: for every trackable beacon it
// predicts the zone the beacon is in from the RSSI its gateways report,
// smooths the prediction, records zone intervals and tells listeners (the
// WebSocket hub) about zone and position changes.
//
// This file is the contract between the engine and the rest of the
// appliance (HTTP handlers, WebSocket hub, composition root). The types and
// method sets here are what callers may rely on.
package rtls

import (
	"encoding/json"
	"errors"
)

// ErrUnknownAlgorithm is returned by Start for a name not in Algorithms().
var ErrUnknownAlgorithm = errors.New("rtls: unknown algorithm")

// Site is everything the engine knows about the building: maps, zones
// (rectangles in map pixels, with an adjacency graph) and where gateways
// are placed. It is replaced whole by SetSite when an admin edits it.
type Site struct {
	Maps     []Map
	Zones    []Zone
	Gateways []Gateway
}

// Map is one floor plan; coordinates are image pixels.
type Map struct {
	ID     uint64
	Name   string
	Width  float64
	Height float64
	// PixelsPerMeter scales the log-distance model; 0 means unknown
	// (the engine then assumes 10).
	PixelsPerMeter float64
}

// Zone is an axis-aligned rectangle on one map.
type Zone struct {
	ID       uint64
	MapID    uint64
	Name     string
	X1, Y1   float64
	X2, Y2   float64
	Adjacent []uint64 // zone ids reachable in one step (symmetric)
}

// Gateway is a placed receiver. Placed is false when its position is not
// known; algorithms that need positions then ignore it (or learn its zone
// from samples).
type Gateway struct {
	MAC    [6]byte
	MapID  uint64
	X, Y   float64
	Placed bool
}

// Sample is one labelled fingerprint: the mean RSSI per gateway over a short
// window while the beacon stood in Zone. Samples train the k-NN algorithm
// and, through the emission model, the adjacency filter.
//
// N and SD say how many readings each mean averages and their standard
// deviation about it (dB, where N >= 2). They are how grid learns what a
// single reading is worth: its law is fitted on the means, which are
// steadier than the one reading a second it tracks with (gridGW.fade).
// Either may be nil (samples stored before they were recorded).
type Sample struct {
	Zone uint64
	RSSI map[[6]byte]float64 // gateway MAC -> dBm
	N    map[[6]byte]int
	SD   map[[6]byte]float64
	// At is when the sample's window began (Unix ms, the pipeline's
	// receive time; 0 when not known): which device was on which
	// gateway then (appliance.heardBy).
	At int64
}

// AlgorithmInfo describes one algorithm for GET /tracking/algorithms.
type AlgorithmInfo struct {
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Params      map[string]any `json:"params"`
	// Ready is false when the algorithm lacks what it needs (placed
	// gateways, survey samples); Reason says what.
	Ready  bool   `json:"ready"`
	Reason string `json:"reason,omitempty"`
}

// MarshalJSON writes reason as null when the algorithm is ready, as
// docs/api.md has it (omitted, a client testing for null was wrong: a
// review).
func (a AlgorithmInfo) MarshalJSON() ([]byte, error) {
	type plain AlgorithmInfo // without this method
	var reason *string
	if a.Reason != "" {
		reason = &a.Reason
	}
	return json.Marshal(struct {
		plain
		Reason *string `json:"reason"`
	}{plain(a), reason})
}

// Status is the engine's state for GET /tracking/status.
type Status struct {
	Running   bool   `json:"running"`
	Algorithm string `json:"algorithm"`
	Since     int64  `json:"since,omitempty"` // Unix ms of Start
	Beacons   int    `json:"beacons"`         // beacons with a live state
	Located   int    `json:"located"`         // of which have a zone
	Reports   uint64 `json:"reports"`         // sightings observed since Start
	Samples   int    `json:"samples"`         // training samples loaded
	// GatewaysDown are the gateways judged down (liveness.go): silent
	// where they should hear a tag, or their broker connection closed;
	// the algorithms no longer count their silence until they report or
	// connect again.
	GatewaysDown []string `json:"gateways_down"`
	// Surveys are the survey recordings under way (any beacon, whether
	// or not tracking runs).
	Surveys []SurveyStatus `json:"surveys"`
}

// Location is the live prediction for one beacon. Zone 0 means unknown
// (never seen since start, or not heard for the timeout).
type Location struct {
	AssetUID string  `json:"asset_uid"`
	Zone     uint64  `json:"zone_id"`
	ZoneName string  `json:"zone"`
	MapID    uint64  `json:"map_id"`
	X        float64 `json:"x"`
	Y        float64 `json:"y"`
	HasPos   bool    `json:"has_position"`
	Since    int64   `json:"since"`   // Unix ms the beacon entered Zone
	Updated  int64   `json:"updated"` // Unix ms of the last sighting used
	// Seq orders a beacon's track events: each has a larger Seq than the
	// one before (across Stop, Start, a forget and a rename too; it is
	// not a count), and a Location
	// read carries the Seq of the last event emitted (or, before any,
	// one below the first the state will emit). A
	// consumer that may receive them out of order (the WebSocket hub,
	// whose snapshot can overtake a queued event) keeps the newest.
	// Wall-clock times cannot: the clock may step.
	Seq uint64 `json:"-"`
}

// GatewayRSSI is one gateway's smoothed and last raw reading of a beacon,
// for the admin debug channel.
type GatewayRSSI struct {
	Gateway  string  `json:"gateway"` // 12 upper-case hex digits
	RSSI     int     `json:"rssi"`    // last raw dBm
	Smoothed float64 `json:"smoothed"`
	At       int64   `json:"ts"` // Unix ms
}

// Event is what listeners receive. Track events come on every zone or
// position change; Debug events on every sighting of a beacon for which the
// debug filter said yes.
type Event struct {
	Debug    bool
	Location Location      // track events
	RSSI     []GatewayRSSI // debug events
	// Offset (debug events) is how many dB louder than the survey tag
	// the engine hears this tag (offset.go); the algorithms see RSSI
	// minus Offset.
	Offset float64
	// Standing (debug events) is the share of grid's belief that the
	// tag stands (Params.StandFor), nil when no standing belief is kept.
	Standing *float64
	AssetUID string
}

// Listener receives events on the ingest path: it must not block (copy
// into a bounded buffer and drop when full).
type Listener func(Event)

// The Engine (engine.go) provides, in addition to ingest.Subscriber's
// Observe(b *ingest.Batch, w *ingest.Writes):
//
//	New(Options) *Engine
//	SetSite(Site)
//	SetSamples([]Sample)
//	Algorithms() []AlgorithmInfo
//	Start(name string) error      // ErrUnknownAlgorithm; restarting resets live state
//	Stop()
//	Status() Status
//	Current() string              // "" when stopped
//	Location(uid string) (Location, bool) // false: not seen since Start
//	Locations() []Location
//	Listen(l Listener, debug func(uid string) bool) (cancel func())
//	Record(uid string, zone uint64) // start recording survey samples of uid in zone
//	StopRecording(uid string) []Sample // nil: uid was not recording; not stored
//	StopSurvey(uid string, now time.Time) (store.ZoneSurveyStored, error) // stop and store
//	Rename(oldUID, newUID string) // remint/merge
//	Close()
