package push

import (
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"
)

// MaxMessage is the push server's message limit (ntfy: 4096 bytes).
const MaxMessage = 4096

// maxItemText caps one item's text so a single line always fits a part.
const maxItemText = 400

// digestCategories are the categories with scheduled digests: the four
// bulk ones and the daily quiet snapshot of sensors.
var digestCategories = []string{CatSensors, CatBatteries, CatNotSeen, CatCalibration, CatHealth}

// Boundary returns the latest bucket boundary <= t. Boundaries are wall
// clock times in loc: for intervals under a day, anchor + k*interval of
// each local day (so 09:00 stays 09:00 across DST changes); for whole
// days, the anchor every interval/24h local days.
func Boundary(t time.Time, anchor string, loc *time.Location, interval time.Duration) time.Time {
	var h, m int
	if _, err := fmt.Sscanf(anchor, "%d:%d", &h, &m); err != nil {
		h, m = 9, 0
	}
	if interval <= 0 {
		interval = 24 * time.Hour
	}
	lt := t.In(loc)
	best := time.Time{}
	for back := 0; back <= 400 && best.IsZero(); back++ {
		y, mo, d := lt.AddDate(0, 0, -back).Date()
		for _, b := range dayBoundaries(y, mo, d, h, m, loc, interval) {
			if !b.After(t) && b.After(best) {
				best = b
			}
		}
	}
	return best
}

// NextBoundary returns the first boundary strictly after t. It takes the
// earliest of the local days' boundaries after t, day by day forward,
// rather than probing ahead by steps: over a spring-forward gap two wall
// clock boundaries 90 min apart can be 30 min apart in real time, and a
// probe an hour long stepped over the first of them (a reviewer's
// brute-force check).
func NextBoundary(t time.Time, anchor string, loc *time.Location, interval time.Duration) time.Time {
	var h, m int
	if _, err := fmt.Sscanf(anchor, "%d:%d", &h, &m); err != nil {
		h, m = 9, 0
	}
	if interval <= 0 {
		interval = 24 * time.Hour // as Boundary: never a zero step
	}
	lt := t.In(loc)
	// From the day before: a boundary of the previous local day cannot be
	// after t, but starting there costs one day and needs no proof.
	for ahead := -1; ahead <= 400; ahead++ {
		y, mo, d := lt.AddDate(0, 0, ahead).Date()
		var best time.Time
		for _, b := range dayBoundaries(y, mo, d, h, m, loc, interval) {
			if b.After(t) && (best.IsZero() || b.Before(best)) {
				best = b
			}
		}
		if !best.IsZero() {
			return best
		}
	}
	return t.Add(interval)
}

func dayBoundaries(y int, mo time.Month, d, h, m int, loc *time.Location, interval time.Duration) []time.Time {
	anchorSec := h*3600 + m*60
	if interval >= 24*time.Hour {
		days := int(interval / (24 * time.Hour))
		dayNum := int(time.Date(y, mo, d, 12, 0, 0, 0, time.UTC).Unix() / 86400)
		if dayNum%days != 0 {
			return nil
		}
		return []time.Time{time.Date(y, mo, d, 0, 0, anchorSec, 0, loc)}
	}
	step := int(interval / time.Second)
	var out []time.Time
	for sec := anchorSec % step; sec < 86400; sec += step {
		out = append(out, time.Date(y, mo, d, 0, 0, sec, 0, loc))
	}
	return out
}

// Digest builds one category's digest: a title, the active conditions
// and the changes since the previous bucket, split into numbered parts so
// every rendered message (body and record) fits MaxMessage. Splitting is
// by whole lines and item texts are cut on rune boundaries, so no part
// carries broken UTF-8.
func Digest(cat string, active []Item, changes []Item, at int64, quiet bool) []Message {
	if len(active) == 0 && len(changes) == 0 {
		return nil
	}
	sort.Slice(active, func(i, j int) bool { return active[i].Subject < active[j].Subject })
	prio, intent, title := PrioDefault, IntentDigest, digestTitle(cat, len(active))
	if quiet {
		prio, intent, title = PrioMin, IntentSnapshot, snapshotTitle(cat, len(active))
	}
	return parts(cat, title, "digest:"+cat, active, changes, at, prio, intent)
}

// snapshotTitle is a quiet current-state message's title. Health's is the
// category's whole state, infrastructure too (a phone subscribing now
// must learn mqtt_down), so not "Fleet health: N exceptions", the
// digest's count of fleet conditions only (a review).
func snapshotTitle(cat string, n int) string {
	if cat == CatHealth {
		return "Health: " + count(n, "active condition", "active conditions")
	}
	return digestTitle(cat, n)
}

// lastWords is the quiet message (in parts if it must) carrying the last
// words owed to subjects of one category (Service.Told): each item a
// subject's phase, as digest changes are.
func lastWords(cat string, items []Item, at int64) []Message {
	n := 0
	for _, it := range items {
		if it.Phase == PhaseResolved {
			n++ // one per old subject
		}
	}
	return parts(cat, fmt.Sprintf("Asset ids changed: %d", n), "changes:"+cat, nil, items, at, PrioMin, IntentState)
}

// parts renders active items and changes as numbered messages that each
// fit MaxMessage.
func parts(cat, title, subject string, active, changes []Item, at int64, prio int, intent string) []Message {
	tags := categoryTags(cat)
	type line struct {
		text string
		it   Item
	}
	var lines []line
	for _, it := range active {
		it.Text = truncRunes(it.Text, maxItemText)
		lines = append(lines, line{"• " + it.Subject + ": " + it.Text, it})
	}
	for _, it := range changes {
		it.Text = truncRunes(it.Text, maxItemText)
		lines = append(lines, line{"Δ " + it.Subject + " " + it.Phase + ": " + it.Text, it})
	}
	base := Message{Category: cat, Title: title, Tags: tags, Priority: prio,
		Record: Record{Category: cat, Kind: KindCondition, Phase: PhaseSnapshot, Intent: intent, Subject: subject, At: at, Seq: 1 << 62, Part: 99, Parts: 99}}
	var out []Message
	cur := base
	for _, l := range lines {
		next := cur
		next.Body = strings.TrimPrefix(cur.Body+"\n"+l.text, "\n")
		next.Record.Items = append(append([]Item(nil), cur.Record.Items...), l.it)
		if len(next.Render("t").Message) > MaxMessage-200 && len(cur.Record.Items) > 0 {
			out = append(out, cur)
			cur = base
			next = cur
			next.Body = l.text
			next.Record.Items = []Item{l.it}
		}
		cur = next
	}
	out = append(out, cur)
	for i := range out {
		out[i].Record.Seq = 0
		out[i].Record.Part, out[i].Record.Parts = i+1, len(out)
		if len(out) > 1 {
			out[i].Title = fmt.Sprintf("%s (part %d/%d)", title, i+1, len(out))
		} else {
			out[i].Record.Part, out[i].Record.Parts = 0, 0
		}
	}
	return out
}

func digestTitle(cat string, n int) string {
	switch cat {
	case CatSensors:
		return fmt.Sprintf("Sensors: %d out of range", n)
	case CatBatteries:
		return "Low battery: " + count(n, "device", "devices")
	case CatNotSeen:
		return "Not seen: " + count(n, "sensor", "sensors")
	case CatCalibration:
		return "Calibration expired: " + count(n, "device", "devices")
	case CatHealth:
		return "Fleet health: " + count(n, "exception", "exceptions")
	}
	return cat
}

// count is n with its noun ("1 device", "2 devices"): staff read these
// titles on a lock screen ("1 devices": a black-box check).
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func truncRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func categoryTags(cat string) []string {
	switch cat {
	case CatBatteries:
		return tagsBattery
	case CatCalibration:
		return tagsCalib
	case CatHealth:
		return tagsHealth
	}
	return tagsSensor
}
