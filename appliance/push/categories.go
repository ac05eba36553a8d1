package push

import (
	"fmt"
	"strings"

	"beaconhub/store"
)

// The builders below are the spec's category table: trigger -> title,
// body, tags, priority. Cadence decides whether and when they are sent.

// SensorAlert is an out-of-range reading: the title is the reason text
// with the value, the body adds the device.
func SensorAlert(r store.SensorConditionRecord, d Device) Message {
	return Message{Category: CatSensors, Title: r.Message, Body: "Device: " + d.String(),
		Tags: tagsSensor, Priority: PrioUrgent, Record: condRecord(CatSensors, r, d, IntentAlert)}
}

// SensorRecovery is the quiet state update when a reading is back in
// range: minimum priority, so phones do not ring.
func SensorRecovery(r store.SensorConditionRecord, d Device) Message {
	return Message{Category: CatSensors, Title: resolvedTitle(r, "Back in range"), Body: "Device: " + d.String(),
		Tags: tagsSensor, Priority: PrioMin, Record: condRecord(CatSensors, r, d, IntentState)}
}

// resolvedTitle is a recovery's title: usual, or the reason when the
// device was deleted or retired (it is not back in range, nor seen).
func resolvedTitle(r store.SensorConditionRecord, usual string) string {
	if r.Message == store.ConditionUnmonitored {
		return r.Message
	}
	return usual
}

// ButtonPress maps a committed press event: panic -> sos, watch ->
// watches, a test send -> test (rule 9: never sos) with the fake type's
// tags.
func ButtonPress(e store.Event) (Message, bool) {
	cat, title := "", ""
	switch e.BeaconType {
	case "panic":
		cat, title = CatSOS, "Panic button pushed"
	case "watch":
		cat, title = CatWatches, "Watch button pushed"
	default:
		return Message{}, false
	}
	if e.AlertsysMessage != "" {
		title = e.AlertsysMessage
	}
	d := Device{Name: e.BeaconName, MAC: e.MAC, AssetUID: e.AssetUID, Type: e.BeaconType}
	body := "Device: " + d.String()
	if e.Location != "" {
		body += "\nLocation: " + e.Location
	}
	rec := Record{Category: cat, Kind: KindMoment, Phase: PhaseMoment, Intent: IntentAlert,
		Subject: fmt.Sprintf("event:%d", e.ID), Device: d, At: e.CreatedAt}
	if e.Test {
		cat, title = CatTest, "Test: "+title
		rec.Category, rec.Intent = CatTest, IntentTest
	}
	return Message{Category: cat, Title: title, Body: body, Tags: tagsButton, Priority: PrioUrgent, Record: rec}, true
}

// BatteryAlert is a low battery: 'Low battery' with volts.
func BatteryAlert(r store.SensorConditionRecord, d Device) Message {
	title := "Low battery"
	var mv int
	if _, err := fmt.Sscanf(r.Message, "battery %d mV", &mv); err == nil {
		// Cut, not rounded: 2799 mV read "2.80 V", the 2800 mV
		// threshold itself, under a "Low battery" title (a black-box
		// check).
		title = fmt.Sprintf("Low battery %d.%02d V", mv/1000, mv%1000/10)
	}
	if r.Phase == store.HealthResolved {
		title = resolvedTitle(r, "Battery ok")
	}
	return Message{Category: CatBatteries, Title: title, Body: "Device: " + d.String(),
		Tags: tagsBattery, Priority: PrioUrgent, Record: condRecord(CatBatteries, r, d, IntentAlert)}
}

// NotSeenAlert is an inactivity condition; panic and watch devices carry
// the button tags, sensors the thermometer.
func NotSeenAlert(r store.SensorConditionRecord, d Device) Message {
	tags := tagsSensor
	if d.Type == "panic" || d.Type == "watch" {
		tags = tagsButton
	}
	title := r.Message
	if r.Phase == store.HealthResolved {
		title = resolvedTitle(r, "Seen again")
	}
	return Message{Category: CatNotSeen, Title: title, Body: "Device: " + d.String(),
		Tags: tags, Priority: PrioUrgent, Record: condRecord(CatNotSeen, r, d, IntentAlert)}
}

// CalibrationAlert is an expired calibration; the checker's message holds
// uid, MAC, type, last calibrated and interval.
func CalibrationAlert(r store.SensorConditionRecord, d Device) Message {
	who := d.AssetUID
	if who == "" {
		who = d.MAC
	}
	if who == "" {
		who = r.Subject
	}
	title := "Calibration expired: " + who
	if r.Phase == store.HealthResolved {
		title = "Calibrated: " + who
	}
	return Message{Category: CatCalibration, Title: title, Body: r.Message,
		Tags: tagsCalib, Priority: PrioDefault, Record: condRecord(CatCalibration, r, d, IntentAlert)}
}

// isFleetKey reports whether a health key is a fleet condition
// (fleet:stale:<uid>, fleet:never_seen:<uid>), not infrastructure.
func isFleetKey(key string) bool { return strings.HasPrefix(key, "fleet:") }

// HealthAlert is a health transition (the health event as title).
func HealthAlert(h store.HealthRecord) Message {
	title := h.Message
	if title == "" {
		title = h.Key
	}
	if h.Phase == store.HealthResolved {
		title = "Resolved: " + h.Key
	}
	body := "Health: " + h.Key
	rec := Record{Category: CatHealth, Kind: KindCondition, Phase: h.Phase, Intent: IntentAlert,
		Subject: h.Key, At: h.At}
	if isFleetKey(h.Key) {
		rec.Device.AssetUID = h.Key[strings.LastIndex(h.Key, ":")+1:]
	}
	return Message{Category: CatHealth, Title: title, Body: body, Tags: tagsHealth, Priority: PrioHigh, Record: rec}
}

// OpsCopy is the vendor ops copy of a health message: title prefixed with
// the server id so one vendor topic serves every install.
func OpsCopy(serverID string, m Message) Message {
	m.Category = ""
	m.Title = serverID + ": " + m.Title
	return m
}

func condRecord(cat string, r store.SensorConditionRecord, d Device, intent string) Record {
	phase := PhaseActive
	if r.Phase == store.HealthResolved {
		phase = PhaseResolved
	}
	return Record{Category: cat, Kind: KindCondition, Phase: phase, Intent: intent, Subject: r.Key, Device: d, At: r.At}
}
