package assets

import (
	"fmt"
	"math"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Merge folds older rows of one physical place (typically LEGACY- rows a
// sensor left behind each time its device was swapped before 8.0) into a
// survivor that keeps its uid. Windows are exclusive (rule 6): every
// survivor reading is kept; each source, in the order given, contributes
// only its readings newer than the newest reading kept so far (the
// survivor's, then each earlier source's), and its older, overlapping
// readings are deleted. Windows are per asset, over all metrics.

// MaxMergeSources bounds one merge.
const MaxMergeSources = 50

// MergeInput is the body of the merge endpoints.
type MergeInput struct {
	SourceIDs []uint64 `json:"source_ids"`
}

// MergeSource is one source's window: readings with After < ts are kept
// (no lower bound when After is null); Until is its newest reading.
type MergeSource struct {
	ID       uint64 `json:"id"`
	AssetUID string `json:"asset_uid"`
	MAC      string `json:"mac"`
	After    *int64 `json:"after"`
	Until    *int64 `json:"until"`
	Kept     int    `json:"kept"`
	Dropped  int    `json:"dropped"`
	// StaysDropped counts the source's zone stays the windows leave out:
	// those that began before the last stay kept so far ended.
	StaysDropped int `json:"stays_dropped"`
}

// MergePlan previews a merge; apply returns the same numbers.
type MergePlan struct {
	AssetUID         string        `json:"asset_uid"`
	SurvivorReadings int           `json:"survivor_readings"`
	SurvivorUntil    *int64        `json:"survivor_until"`
	Sources          []MergeSource `json:"sources"`
	Kept             int           `json:"kept"`
	Dropped          int           `json:"dropped"`
	StaysDropped     int           `json:"stays_dropped"`
	DeviceAfter      string        `json:"device_after"`
}

type mergePlan struct {
	MergePlan
	survivor *store.Beacon
	sources  []*store.Beacon
	// stayMarks[i] is where the last zone stay kept before source i
	// ends (math.MinInt64: none kept, nothing dropped).
	stayMarks []int64
}

func planMerge(t *store.AssetTx, uid string, in MergeInput) (*mergePlan, error) {
	surv, err := beaconByUID(t, uid)
	if err != nil {
		return nil, err
	}
	if !surv.Active {
		return nil, apperr.Invalid("%s is %s and cannot take a merge", surv.AssetUID, beaconStatus(surv))
	}
	if len(in.SourceIDs) == 0 || len(in.SourceIDs) > MaxMergeSources {
		return nil, apperr.InvalidField("source_ids", "source_ids must list 1 to %d beacon ids", MaxMergeSources)
	}
	p := &mergePlan{survivor: surv}
	p.AssetUID, p.DeviceAfter = surv.AssetUID, surv.MAC
	seen := map[uint64]bool{}
	for _, id := range in.SourceIDs {
		switch {
		case id == surv.ID:
			return nil, apperr.InvalidField("source_ids", "source_ids must not contain the survivor itself (%d)", id)
		case seen[id]:
			return nil, apperr.InvalidField("source_ids", "beacon %d is listed twice", id)
		}
		seen[id] = true
		b, err := t.Beacon(id)
		if err != nil {
			return nil, apperr.InvalidField("source_ids", "beacon %d does not exist", id)
		}
		if !b.Active {
			return nil, apperr.InvalidField("source_ids", "beacon %d (%s) is %s", id, b.AssetUID, beaconStatus(b))
		}
		p.sources = append(p.sources, b)
	}
	if p.SurvivorReadings, err = t.HistoryCount(surv.AssetUID, 0, math.MaxInt64); err != nil {
		return nil, err
	}
	mark, has, err := t.HistoryLast(surv.AssetUID)
	if err != nil {
		return nil, err
	}
	if has {
		p.SurvivorUntil = ptr(mark)
	}
	// The zone stays' windows, as DropZoneIntervalsBefore applies them
	// source by source: the mark is where the last stay kept ends
	// (math.MinInt64 while none is: nothing began before it).
	stayMark, err := t.ZoneIntervalsEnd(surv.AssetUID)
	if err != nil {
		return nil, err
	}
	for _, b := range p.sources {
		ms := MergeSource{ID: b.ID, AssetUID: b.AssetUID, MAC: b.MAC}
		spans, err := t.ZoneIntervalSpans(b.AssetUID)
		if err != nil {
			return nil, err
		}
		p.stayMarks = append(p.stayMarks, stayMark)
		next := stayMark
		for _, s := range spans {
			if s[0] < stayMark {
				ms.StaysDropped++
				continue
			}
			next = max(next, s[1])
		}
		stayMark = next
		p.StaysDropped += ms.StaysDropped
		from := int64(0)
		if has {
			ms.After, from = ptr(mark), mark+1
		}
		if ms.Dropped, err = t.HistoryCount(b.AssetUID, 0, from); err != nil {
			return nil, err
		}
		if ms.Kept, err = t.HistoryCount(b.AssetUID, from, math.MaxInt64); err != nil {
			return nil, err
		}
		last, ok, err := t.HistoryLast(b.AssetUID)
		if err != nil {
			return nil, err
		}
		if ok {
			ms.Until = ptr(last)
			if !has || last > mark {
				mark, has = last, true
			}
		}
		p.Kept += ms.Kept
		p.Dropped += ms.Dropped
		p.Sources = append(p.Sources, ms)
	}
	if m := p.sources[len(p.sources)-1].MAC; m != "" {
		p.DeviceAfter = m
	}
	return p, nil
}

func ptr(v int64) *int64 { return &v }

// apply merges in one transaction. Devices move first, so an asset never
// holds two open assignments: the last source's device (if any) becomes
// the survivor's, every other device of the sources (and the survivor's
// own, when replaced) becomes available.
func (p *mergePlan) apply(t *store.AssetTx, fx *effects) error {
	surv, last := p.survivor, len(p.sources)-1
	survRef := store.AssetRef{Kind: store.KindBeacon, ID: surv.ID}
	if p.sources[last].MAC != "" && surv.MAC != "" {
		if err := t.Detach(surv.MAC, t.Now, "merged", store.DeviceAvailable); err != nil {
			return err
		}
		surv.MAC = ""
	}
	for i, b := range p.sources {
		ms := p.Sources[i]
		if b.MAC != "" && i != last {
			if err := t.Detach(b.MAC, t.Now, "merged into "+surv.AssetUID, store.DeviceAvailable); err != nil {
				return err
			}
		}
		if ms.After != nil {
			n, err := t.DeleteHistoryThrough(b.AssetUID, *ms.After)
			if err != nil {
				return err
			}
			if n != ms.Dropped {
				return fmt.Errorf("merge %s: planned to drop %d readings of %s, dropped %d", surv.AssetUID, ms.Dropped, b.AssetUID, n)
			}
		}
		if n, err := t.DropZoneIntervalsBefore(b.AssetUID, p.stayMarks[i]); err != nil {
			return err
		} else if n != ms.StaysDropped {
			return fmt.Errorf("merge %s: planned to drop %d zone stays of %s, dropped %d", surv.AssetUID, ms.StaysDropped, b.AssetUID, n)
		}
		// The stays kept move here, in the merge's transaction: deferred
		// to the uid sweep, a crash or a failed sweep left them under the
		// merged source, and the only retry (remint apply) judged them
		// against the survivor's later stays and dropped them (a review).
		moved, err := t.RenameUID(b.AssetUID, surv.AssetUID)
		if err != nil {
			return err
		}
		if moved[store.RewriterHistory] != ms.Kept {
			return fmt.Errorf("merge %s: planned to keep %d readings of %s, moved %d", surv.AssetUID, ms.Kept, b.AssetUID, moved[store.RewriterHistory])
		}
		if _, err := t.MoveAssignments(store.AssetRef{Kind: store.KindBeacon, ID: b.ID}, survRef); err != nil {
			return err
		}
		if err := t.SetAlias(b.AssetUID, surv.AssetUID); err != nil {
			return err
		}
		device := i == last && b.MAC != ""
		if device {
			surv.MAC = b.MAC
		}
		b.MAC, b.Status, b.Active, b.MergedInto = "", store.AssetMerged, false, surv.ID
		if err := t.PutBeacon(b); err != nil {
			return err
		}
		// The source's readings the history kept (newer than After) may
		// be the survivor's latest now.
		after := int64(math.MinInt64)
		if ms.After != nil {
			after = *ms.After
		}
		fx.renames = append(fx.renames, rename{old: b.AssetUID, new: surv.AssetUID, merge: true, after: after, deviceMoved: device})
	}
	return t.PutBeacon(surv)
}

// PlanMerge previews a merge into the beacon uid; it writes nothing.
func (s *Service) PlanMerge(uid string, in MergeInput) (MergePlan, error) {
	var out MergePlan
	err := s.view(func(t *store.AssetTx) error {
		p, err := planMerge(t, uid, in)
		if err == nil {
			out = p.MergePlan
		}
		return err
	})
	return out, err
}

// Merge merges the sources into the beacon uid, irreversibly, in one
// transaction.
func (s *Service) Merge(uid string, in MergeInput) (MergePlan, error) {
	// What ingest queued under the sources' uids lands first, so the
	// merge's exclusive windows judge it (a stay's close queued behind
	// the merge landed under the old uid and did nothing: the stay
	// stayed open in the survivor's history, a review).
	if w := s.hooks.Writer; w != nil {
		if err := w.Flush(); err != nil {
			s.log.Warn("writer flush before merge failed", "err", err)
		}
	}
	var out MergePlan
	err := s.write(func(t *store.AssetTx, fx *effects) error {
		p, err := planMerge(t, uid, in)
		if err != nil {
			return err
		}
		if err := p.apply(t, fx); err != nil {
			return err
		}
		out = p.MergePlan
		return nil
	})
	return out, err
}
