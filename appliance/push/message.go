// Package push publishes BeaconHub's staff notifications to an ntfy
// server: eight staff categories ({server_id}-{topic_id}), the vendor ops
// topic, per-category cadence (immediate with cooldowns, or scheduled
// digests), a 429 backoff per server, retry queues for immediate alerts
// (staff and ops apart, mirrored to the store), a replay at start of the
// presses a crash kept from the push server, and a durable outbox for
// digest work. Every message ends with the machine-readable "alert data
// v1" record (see record.go).
package push

import (
	"strings"
)

// Staff categories (topic ids). The order is the spec's.
const (
	CatSensors     = "sensors"
	CatSOS         = "sos"
	CatWatches     = "watches"
	CatBatteries   = "batteries"
	CatNotSeen     = "notseen"
	CatCalibration = "calibration"
	CatTest        = "test"
	CatHealth      = "health"
)

// Categories lists the eight staff categories.
var Categories = []string{CatSensors, CatSOS, CatWatches, CatBatteries, CatNotSeen, CatCalibration, CatTest, CatHealth}

// ntfy priorities.
const (
	PrioMin     = 1
	PrioDefault = 3
	PrioHigh    = 4
	PrioUrgent  = 5
)

// Tag sets from the spec's category table.
var (
	tagsSensor  = []string{"warning", "thermometer"}
	tagsButton  = []string{"warning", "rotating_light"}
	tagsBattery = []string{"warning", "battery"}
	tagsCalib   = []string{"warning", "wrench"}
	tagsHealth  = []string{"warning", "triangular_flag_on_post"}
)

// Message is one notification before it is rendered for the wire.
type Message struct {
	Category string // staff category, or "" for the vendor ops topic
	Title    string
	Body     string // human-readable text; the record is appended on render
	Tags     []string
	Priority int
	Record   Record
}

// Device identifies the device a message is about.
type Device struct {
	Name     string `json:"name,omitempty"`
	MAC      string `json:"mac,omitempty"`
	AssetUID string `json:"asset_uid,omitempty"`
	Type     string `json:"type,omitempty"`
}

func (d Device) String() string {
	var parts []string
	if d.Name != "" {
		parts = append(parts, d.Name)
	}
	if d.AssetUID != "" {
		parts = append(parts, d.AssetUID)
	} else if d.MAC != "" {
		parts = append(parts, d.MAC)
	}
	return strings.Join(parts, " ")
}

// Topic is a staff topic name.
func Topic(serverID, category string) string { return serverID + "-" + category }

// Rendered is the wire form of a message.
type Rendered struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Tags     []string `json:"tags"`
	Priority int      `json:"priority"`
}

// Render produces the wire form for a topic: the body, a blank line and
// the alert data v1 record.
func (m Message) Render(topic string) Rendered {
	return Rendered{Topic: topic, Title: m.Title, Message: m.Body + "\n\n" + m.Record.Text(), Tags: m.Tags, Priority: m.Priority}
}
