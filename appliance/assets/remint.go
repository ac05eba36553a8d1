package assets

import (
	"fmt"

	"beaconhub/store"
)

// Remint turns LEGACY- uids into real ones once the asset has a type and
// a fully coded home location. Apply works one asset per transaction
// (record, uid index, alias and every uid-keyed bucket together), so a
// crash leaves each asset entirely old or entirely new, and running apply
// again finishes the rest.

// renameAsset moves an asset from old to new everywhere inside t; the
// caller has claimed new already (Mint).
func renameAsset(t *store.AssetTx, old, new string, fx *effects) error {
	if err := t.ReleaseUID(old); err != nil {
		return err
	}
	if err := t.SetAlias(old, new); err != nil {
		return err
	}
	if _, err := t.RenameUID(old, new); err != nil {
		return err
	}
	fx.renames = append(fx.renames, rename{old: old, new: new})
	return nil
}

func remintBeacon(t *store.AssetTx, b *store.Beacon, fx *effects) error {
	uid, err := Mint(t, TypePrefix(b.Type), b.LocationID, store.AssetRef{Kind: store.KindBeacon, ID: b.ID})
	if err != nil {
		return err
	}
	if err := renameAsset(t, b.AssetUID, uid, fx); err != nil {
		return err
	}
	b.AssetUID = uid
	return nil
}

// RemintItem is one legacy asset in a remint plan.
type RemintItem struct {
	Kind     string         `json:"kind"`
	ID       uint64         `json:"id"`
	AssetUID string         `json:"asset_uid"`
	NewUID   string         `json:"new_uid,omitempty"` // what apply will mint
	Records  map[string]int `json:"records"`           // uid-keyed records per bucket
	Blocked  string         `json:"blocked,omitempty"` // why it cannot be minted yet
	prefix   string
	location uint64
}

// RemintPlan counts what apply would do. Nothing is written.
type RemintPlan struct {
	Legacy   int                  `json:"legacy"`
	Mintable int                  `json:"mintable"`
	Blocked  int                  `json:"blocked"`
	Records  map[string]int       `json:"records"`   // to rewrite for the mintable assets, per bucket
	MACKeyed []store.AuditFinding `json:"mac_keyed"` // records still keyed by a MAC: adopted first
	Stray    map[string]int       `json:"stray"`     // records left under former uids: swept last
	Assets   []RemintItem         `json:"assets"`
}

// candidates lists the active legacy assets in apply order.
func candidates(t *store.AssetTx) ([]RemintItem, error) {
	var out []RemintItem
	err := t.EachBeacon(func(b *store.Beacon) error {
		if !b.Active || !IsLegacy(b.AssetUID) {
			return nil
		}
		it := RemintItem{Kind: store.KindBeacon, ID: b.ID, AssetUID: b.AssetUID, prefix: TypePrefix(b.Type), location: b.LocationID}
		if b.Type == TypeUnknown || it.prefix == "" {
			it.Blocked = "type is unknown"
		}
		out = append(out, it)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = t.EachGateway(func(g *store.Gateway) error {
		if gatewayStatus(g) == store.AssetActive && IsLegacy(g.AssetUID) {
			out = append(out, RemintItem{Kind: store.KindGateway, ID: g.ID, AssetUID: g.AssetUID, prefix: PrefixGateway, location: g.LocationID})
		}
		return nil
	})
	for i := range out {
		it := &out[i]
		if it.Blocked != "" {
			continue
		}
		path, why := mintable(t, it.location)
		if why == "" && len(formatUID(it.prefix, path, 1<<63)) > store.MaxUIDLen {
			why = fmt.Sprintf("location path %q is too long to mint from", path)
		}
		it.Blocked = why
	}
	return out, err
}

// RemintPlan previews apply.
func (s *Service) RemintPlan() (RemintPlan, error) {
	p := RemintPlan{Records: map[string]int{}, Stray: map[string]int{}, Assets: []RemintItem{}, MACKeyed: []store.AuditFinding{}}
	err := s.view(func(t *store.AssetTx) error {
		items, err := candidates(t)
		if err != nil {
			return err
		}
		pred := &predictUIDs{t: t, next: map[string]uint64{}}
		for _, it := range items {
			if it.Records, err = t.CountUID(it.AssetUID); err != nil {
				return err
			}
			p.Legacy++
			if it.Blocked != "" {
				p.Blocked++
			} else {
				p.Mintable++
				path, _ := mintable(t, it.location)
				it.NewUID = pred.mint(it.prefix, path)
				for b, n := range it.Records {
					p.Records[b] += n
				}
			}
			p.Assets = append(p.Assets, it)
		}
		return t.EachAlias(func(old, _ string) error {
			c, err := t.CountUID(old)
			for b, n := range c {
				p.Stray[b] += n
			}
			return err
		})
	})
	if err != nil {
		return p, err
	}
	f, err := s.db.AuditMACKeys()
	if f != nil {
		p.MACKeyed = f
	}
	return p, err
}

// RemintDone is one asset apply reminted.
type RemintDone struct {
	Kind    string         `json:"kind"`
	ID      uint64         `json:"id"`
	OldUID  string         `json:"old_uid"`
	NewUID  string         `json:"new_uid"`
	Records map[string]int `json:"records"`
}

// RemintResult is what apply did.
type RemintResult struct {
	Reminted []RemintDone      `json:"reminted"`
	Blocked  []RemintItem      `json:"blocked"`
	Adopted  store.AdoptResult `json:"adopted"`
	Swept    map[string]int    `json:"swept"`
}

// RemintApply adopts MAC-keyed records, remints every mintable legacy
// asset (one transaction each), then sweeps records left under former
// uids. On error the assets done so far stay reminted; run it again.
func (s *Service) RemintApply() (res RemintResult, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	res = RemintResult{Reminted: []RemintDone{}, Blocked: []RemintItem{}, Swept: map[string]int{}}
	fx := &effects{}
	defer func() { s.finishRemint(fx, &res) }()

	err = s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
		var err error
		res.Adopted, err = t.AdoptMACKeys()
		return err
	})
	if err != nil {
		return res, fmt.Errorf("adopt MAC-keyed records: %w", err)
	}
	var items []RemintItem
	if err := s.view(func(t *store.AssetTx) error { items, err = candidates(t); return err }); err != nil {
		return res, err
	}
	n := 0
	for _, it := range items {
		if it.Blocked != "" {
			res.Blocked = append(res.Blocked, it)
			continue
		}
		var done RemintDone
		one := &effects{}
		err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
			var err error
			done, err = remintOne(t, it, one)
			if err == nil && s.remintHook != nil {
				err = s.remintHook(n)
			}
			return err
		})
		if err != nil {
			return res, fmt.Errorf("remint %s: %w", it.AssetUID, err)
		}
		n++
		fx.renames = append(fx.renames, one.renames...)
		if done.NewUID != "" {
			res.Reminted = append(res.Reminted, done)
		}
	}
	return res, nil
}

// remintOne remints one asset inside t, re-reading it: a concurrent edit
// or an earlier partial run may have changed it since the plan.
func remintOne(t *store.AssetTx, it RemintItem, fx *effects) (RemintDone, error) {
	done := RemintDone{Kind: it.Kind, ID: it.ID, OldUID: it.AssetUID}
	switch it.Kind {
	case store.KindBeacon:
		b, err := t.Beacon(it.ID)
		if err != nil || !IsLegacy(b.AssetUID) {
			return done, err
		}
		done.OldUID = b.AssetUID
		if done.Records, err = t.CountUID(b.AssetUID); err != nil {
			return done, err
		}
		if err := remintBeacon(t, b, fx); err != nil {
			return done, err
		}
		done.NewUID = b.AssetUID
		return done, t.PutBeacon(b)
	case store.KindGateway:
		g, err := t.Gateway(it.ID)
		if err != nil || !IsLegacy(g.AssetUID) {
			return done, err
		}
		done.OldUID = g.AssetUID
		if done.Records, err = t.CountUID(g.AssetUID); err != nil {
			return done, err
		}
		uid, err := Mint(t, PrefixGateway, g.LocationID, store.AssetRef{Kind: store.KindGateway, ID: g.ID})
		if err != nil {
			return done, err
		}
		if err := renameAsset(t, g.AssetUID, uid, fx); err != nil {
			return done, err
		}
		g.AssetUID, done.NewUID = uid, uid
		return done, t.PutGateway(g)
	}
	return done, fmt.Errorf("cannot remint a %s", it.Kind)
}

// finishRemint reloads the cache, then sweeps every former uid (this run's
// and any a crash or a late write left behind) and moves in-memory state.
func (s *Service) finishRemint(fx *effects, res *RemintResult) {
	s.prepareRenames(fx.renames)
	if err := s.reg.Reload(); err != nil {
		s.log.Error("asset cache reload failed", "err", err)
	}
	if w := s.hooks.Writer; w != nil {
		if err := w.Flush(); err != nil {
			s.log.Warn("writer flush before uid sweep failed", "err", err)
		}
	}
	dropped := map[string]int{} // merged uid -> zone stays its windows dropped; logged once committed
	err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
		clear(dropped)
		type pair struct{ old, new string }
		var all []pair
		if err := t.EachAlias(func(old, _ string) error { all = append(all, pair{old, t.Alias(old)}); return nil }); err != nil {
			return err
		}
		for _, p := range all {
			// A merged beacon's alias keeps the merge's exclusive windows
			// (Service.sweep).
			if ref, ok := t.UIDOwner(p.old); ok && ref.Kind == store.KindBeacon {
				if b, err := t.Beacon(ref.ID); err == nil && b.MergedInto != 0 {
					n, err := t.DropZoneIntervalsBeforeUID(p.old, p.new)
					if err != nil {
						return err
					}
					if n > 0 {
						dropped[p.old] = n
					}
				}
			}
			moved, err := t.RenameUID(p.old, p.new)
			if err != nil {
				return err
			}
			for b, n := range moved {
				res.Swept[b] += n
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("uid sweep failed; run remint apply again", "err", err)
	} else {
		for old, n := range dropped {
			s.log.Info("merge: zone stays written under a merged uid dropped by its windows", "source_uid", old, "stays_dropped", n)
		}
	}
	s.moveLive(fx.renames)
	s.reloaded()
}
