package sensors

import (
	"math"
	"sort"

	"beaconhub/appliance/ingest"
	"beaconhub/store"
)

// AlertLimit is the length of the range-alert list (spec "Limits").
const AlertLimit = 10

// AlertWindowMS bounds how far back the alert list looks.
const AlertWindowMS = 30 * 86400e3

// Alert is a reading outside its beacon's range.
type Alert struct {
	AssetUID string       `json:"asset_uid"`
	Name     string       `json:"name"`
	MAC      string       `json:"mac"`
	Metric   string       `json:"metric"`
	TS       int64        `json:"ts"`
	Value    float64      `json:"value"`
	Range    *store.Range `json:"range"`
}

type span struct{ from, to int64 } // [from, to)

// rangeEpisodes returns, per asset, the spans its range condition was
// active, from the recorded transitions. Out-of-range readings can only
// lie inside them, so the alert list reads those spans instead of a month
// of every sensor's history (at 1,000 sensors, seconds of decoding).
//
// A transition's time is its reading's, by that gateway's clock, and
// gateways' clocks may differ by ingest.MaxSkewMS: a recovery read by one
// gateway can be stamped before the activation another stamped (a
// black-box check: the episode was empty and the reading that raised the
// alert left the list). So each span is widened by that much either side,
// and overlapping ones merged, so that no reading is listed twice.
func (s *Service) rangeEpisodes(now int64) (map[string][]span, error) {
	raw, err := s.rawRangeEpisodes(now)
	if err != nil {
		return nil, err
	}
	for uid, spans := range raw {
		for i := range spans {
			spans[i].from -= ingest.MaxSkewMS
			spans[i].to = max(spans[i].to, spans[i].from+ingest.MaxSkewMS+1) + ingest.MaxSkewMS
		}
		sort.Slice(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
		merged := spans[:0]
		for _, sp := range spans {
			if n := len(merged); n > 0 && sp.from <= merged[n-1].to {
				merged[n-1].to = max(merged[n-1].to, sp.to)
				continue
			}
			merged = append(merged, sp)
		}
		raw[uid] = merged
	}
	return raw, nil
}

// rawRangeEpisodes is rangeEpisodes as the transitions give the spans.
func (s *Service) rawRangeEpisodes(now int64) (map[string][]span, error) {
	out := map[string][]span{}
	open := map[string]int64{}
	cursor := ""
	for {
		recs, err := s.Conds.Records(cursor, 1000)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Kind != CondRange {
				continue
			}
			if r.Phase == store.HealthActive {
				open[r.Subject] = r.Since
			} else {
				out[r.Subject] = append(out[r.Subject], span{r.Since, r.At + 1})
				delete(open, r.Subject)
			}
		}
		if len(recs) < 1000 {
			break
		}
		cursor = recs[len(recs)-1].Cursor
	}
	for uid, since := range open {
		out[uid] = append(out[uid], span{since, now + 1})
	}
	return out, nil
}

// Alerts returns the AlertLimit most recent readings outside the beacon's
// humidity_range / temperature_range within AlertWindowMS before now,
// newest first. Ranges are today's: a changed range re-judges old
// readings, as the list is "outside the beacon's range".
func (s *Service) Alerts(now int64) ([]Alert, error) {
	bs, err := s.Beacons()
	if err != nil {
		return nil, err
	}
	var episodes map[string][]span
	if s.Conds != nil {
		if episodes, err = s.rangeEpisodes(now); err != nil {
			return nil, err
		}
	}
	out := []Alert{}
	for uid, b := range bs {
		if !active(&b) || (b.HumidityRange == nil && b.TemperatureRange == nil) {
			continue
		}
		spans := []span{{math.MinInt64, now + 1}}
		if episodes != nil {
			spans = episodes[uid]
		}
		for _, sp := range spans {
			for _, mr := range []struct {
				m uint8
				r *store.Range
			}{{Humidity, b.HumidityRange}, {Temperature, b.TemperatureRange}} {
				// Older readings than the current 10th cannot enter the list.
				from := max(sp.from, now-AlertWindowMS)
				if len(out) >= AlertLimit {
					from = max(from, out[AlertLimit-1].TS+1)
				}
				if mr.r == nil || from >= sp.to {
					continue
				}
				n := 0
				err := s.DB.QueryHistoryReverse(uid, mr.m, from, sp.to, func(ts int64, v float64) bool {
					if v < mr.r.Min || v > mr.r.Max {
						out = append(out, Alert{uid, b.Name, b.MAC, MetricNames[mr.m], ts, v, mr.r})
						n++
					}
					return n < AlertLimit
				})
				if err != nil {
					return nil, err
				}
				sort.SliceStable(out, func(i, j int) bool { return out[i].TS > out[j].TS })
				out = out[:min(len(out), AlertLimit)]
			}
		}
	}
	return out, nil
}
