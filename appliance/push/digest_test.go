package push

import (
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestBoundariesAcrossDSTInPrague(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Prague")
	if err != nil {
		t.Skip("no tzdata:", err)
	}
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, loc)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	cases := []struct {
		now      string
		interval time.Duration
		want     string // next boundary, local
	}{
		{"2026-03-28 11:00", 24 * time.Hour, "2026-03-29 09:00"}, // spring forward night
		{"2026-10-24 09:00", 24 * time.Hour, "2026-10-25 09:00"}, // fall back night
		{"2026-03-29 01:30", 6 * time.Hour, "2026-03-29 03:00"},  // wall clock 03:00 CEST, 30 min of real time later
		{"2026-03-29 03:00", 6 * time.Hour, "2026-03-29 09:00"},
		{"2026-10-25 02:30", 6 * time.Hour, "2026-10-25 03:00"},
		{"2026-03-28 08:59", 48 * time.Hour, ""},
	}
	for _, c := range cases {
		got := NextBoundary(at(c.now), "09:00", loc, c.interval)
		if c.want == "" {
			if got.In(loc).Format("15:04") != "09:00" {
				t.Fatalf("48h buckets must stay at 09:00 local, got %v", got.In(loc))
			}
			continue
		}
		if !got.Equal(at(c.want)) {
			t.Fatalf("next after %s every %v: got %v want %s", c.now, c.interval, got.In(loc), c.want)
		}
	}
	// 24 h apart in wall clock is 23 h of real time over spring forward.
	a := Boundary(at("2026-03-28 10:00"), "09:00", loc, 24*time.Hour)
	b := Boundary(at("2026-03-29 10:00"), "09:00", loc, 24*time.Hour)
	if b.Sub(a) != 23*time.Hour {
		t.Fatalf("spring-forward day is %v", b.Sub(a))
	}
}

func TestDigestSplitsUTF8Safely(t *testing.T) {
	var items []Item
	for i := 0; i < 120; i++ {
		items = append(items, Item{Subject: fmt.Sprintf("battery:ŽLUŤOUČKÝ-%03d", i), Phase: PhaseActive, At: 1,
			Text: strings.Repeat("Příliš žluťoučký kůň 🐴 ", 3)})
	}
	items = append(items, Item{Subject: "battery:huge", Phase: PhaseActive, Text: strings.Repeat("ř", 5000)})
	parts := Digest(CatBatteries, items, nil, 1, false)
	if len(parts) < 2 {
		t.Fatalf("expected several parts, got %d", len(parts))
	}
	seen := 0
	for i, p := range parts {
		r := p.Render("TST000-batteries")
		if len(r.Message) > MaxMessage || !utf8.ValidString(r.Message) || !utf8.ValidString(r.Title) {
			t.Fatalf("part %d: %d bytes, valid=%v", i, len(r.Message), utf8.ValidString(r.Message))
		}
		want := fmt.Sprintf("(part %d/%d)", i+1, len(parts))
		if !strings.HasSuffix(p.Title, want) {
			t.Fatalf("title %q", p.Title)
		}
		rec, err := ParseRecord(r.Message)
		if err != nil || rec.Part != i+1 || rec.Parts != len(parts) {
			t.Fatalf("part record %+v %v", rec, err)
		}
		seen += len(rec.Items)
	}
	if seen != len(items) {
		t.Fatalf("items across parts %d, want %d", seen, len(items))
	}
}

func TestNextBoundaryIsAlwaysInTheFuture(t *testing.T) {
	for _, iv := range []time.Duration{0, -time.Second, time.Minute, 7 * time.Minute, time.Hour, 72 * time.Hour} {
		for _, anchor := range []string{"09:00", "00:00", "23:59", "bogus"} {
			now := time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC)
			if n := NextBoundary(now, anchor, time.UTC, iv); !n.After(now) || n.Sub(now) > 73*time.Hour {
				t.Fatalf("interval %v anchor %s: next %v", iv, anchor, n)
			}
		}
	}
}

// TestNextBoundaryIsTheFirstBoundaryAfter checks NextBoundary against
// Boundary minute by minute over both DST changes of New York and Prague
// and intervals that do and do not divide a day: the next boundary after
// t is a boundary, and the boundary in force just before it is not after
// t, so none lies between. The old probe by hour-long steps skipped 01:30
// on New York's spring-forward day every 90 min.
func TestNextBoundaryIsTheFirstBoundaryAfter(t *testing.T) {
	for _, zone := range []string{"America/New_York", "Europe/Prague"} {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Skip("no tzdata:", err)
		}
		for _, day := range []time.Time{time.Date(2026, 3, 7, 12, 0, 0, 0, loc), time.Date(2026, 3, 28, 12, 0, 0, 0, loc),
			time.Date(2026, 10, 24, 12, 0, 0, 0, loc), time.Date(2026, 10, 31, 12, 0, 0, 0, loc)} {
			for _, iv := range []time.Duration{30 * time.Minute, 90 * time.Minute, 7 * time.Hour, 24 * time.Hour} {
				for now := day; now.Before(day.Add(36 * time.Hour)); now = now.Add(time.Minute) {
					next := NextBoundary(now, "09:00", loc, iv)
					if !next.After(now) {
						t.Fatalf("%s every %v: next after %v is %v", zone, iv, now, next)
					}
					if b := Boundary(next, "09:00", loc, iv); !b.Equal(next) {
						t.Fatalf("%s every %v: next %v is no boundary (%v is)", zone, iv, next.In(loc), b.In(loc))
					}
					if b := Boundary(next.Add(-time.Second), "09:00", loc, iv); b.After(now) {
						t.Fatalf("%s every %v: after %v next is %v but %v comes first", zone, iv, now.In(loc), next.In(loc), b.In(loc))
					}
				}
			}
		}
	}
}
