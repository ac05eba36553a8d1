package eink

import (
	"errors"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Delete removes a display: its device assignment is closed (the device
// becomes available), its uid is released and its poll state dropped. A
// device that keeps polling registers again as pending, with a fresh row.
func (s *Service) Delete(id uint64) error {
	return s.adminWrite(func(t *store.AssetTx) error {
		d, err := t.EInk(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		if d.MAC != "" {
			if err := t.Detach(d.MAC, t.Now, "deleted", store.DeviceAvailable); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := s.keepVersion(t, d.ID, d.MAC); err != nil {
				return err
			}
		}
		if err := t.ReleaseUID(d.AssetUID); err != nil {
			return err
		}
		if err := t.DeleteEInk(d); err != nil {
			return err
		}
		// Dropped now, inside the lock; a failed commit only costs a
		// reload of the poll state from the store.
		if st := s.polls[id]; st != nil {
			st.mu.Lock()
			st.mac = "" // a poll rendering now is not served the deleted row
			st.mu.Unlock()
		}
		delete(s.polls, id)
		return nil
	})
}

// keepVersion records on device mac, leaving display id, a version past
// the one the display last served it (the poll state in memory is newer
// than the store's until the writer commits it), with s.mu held
// (adminWrite). One past: a poll rendering now, outside s.mu, may still
// bump and serve the next one (a review). A row the device joins later
// starts at the kept version, so it first serves the one after: neither
// what the device drew nor what that poll may have served.
func (s *Service) keepVersion(t *store.AssetTx, id uint64, mac string) error {
	v, fresh := 0, false
	if st := s.polls[id]; st != nil {
		st.mu.Lock()
		v, fresh = st.p.Version, st.p.Fresh
		st.mu.Unlock()
	} else if p, err := t.EInkPollState(id); err == nil {
		v, fresh = p.Version, p.Fresh
	}
	if fresh {
		// Attached and removed before it polled here: what it keeps
		// from before still says what it shows; overwritten, a spare put
		// on the wrong row and taken off again was later served the
		// number it showed (a review).
		return nil
	}
	dev, err := t.Device(mac)
	if errors.Is(err, store.ErrNotFound) || v == 0 {
		return nil
	} else if err != nil {
		return err
	}
	dev.EInkVersion = nextVersion(v)
	return t.PutDevice(dev)
}

// replacedStart is the version a row's poll state starts at when a
// device is replaced in: its first screen there is served the one after,
// the row's next unless that is one the device may show already: the
// version it was served on a row it left (kept-1, or kept for a poll
// under way then), and the neutral screen's at the pending cap, which
// stores nothing (kept%99+1, or 1 for a device that keeps none). A spare
// replaced in after either kept its old screen (a review).
func replacedStart(cur, kept int) int {
	avoid := map[int]bool{1: kept == 0}
	if kept > 0 {
		avoid[prevVersion(kept)], avoid[kept], avoid[nextVersion(kept)] = true, true, true
	}
	v := nextVersion(cur)
	for avoid[v] {
		v = nextVersion(v)
	}
	return prevVersion(v)
}

// nextVersion is the version after v: versions run 1..99 and wrap (0,
// none yet, is followed by 1).
func nextVersion(v int) int { return v%99 + 1 }

// prevVersion is the version before v (1..99).
func prevVersion(v int) int { return (v+97)%99 + 1 }

// keptVersion is the version device mac keeps from a row it left (0:
// none).
func keptVersion(t *store.AssetTx, mac string) int {
	if dev, err := t.Device(mac); err == nil {
		return dev.EInkVersion
	}
	return 0
}

// ReplaceDevice attaches another physical display to the same asset: the
// uid, name, layout and state stay, the old device becomes available. The
// change hash is reset so that the new device redraws at its first poll
// even if its stored version happens to equal the display's.
func (s *Service) ReplaceDevice(id uint64, rawMAC string) (DisplayView, error) {
	mac, ok := store.NormalizeMAC(rawMAC)
	if !ok {
		return DisplayView{}, apperr.InvalidField("mac", "mac must be 12 hex digits")
	}
	var v DisplayView
	err := s.adminWrite(func(t *store.AssetTx) error {
		d, err := t.EInk(id)
		if errors.Is(err, store.ErrNotFound) {
			return notFound(id)
		} else if err != nil {
			return err
		}
		if d.MAC == mac {
			return apperr.InvalidField("mac", "mac is already this display's device")
		}
		if other := t.EInkIDByMAC(mac); other != 0 {
			return apperr.Conflict("mac %s is e-ink display %d; delete that row first", mac, other)
		}
		old := d.MAC
		if old != "" {
			if err := t.Detach(old, t.Now, "replaced", store.DeviceAvailable); err != nil && !errors.Is(err, store.ErrNotFound) {
				return err
			}
			if err := s.keepVersion(t, d.ID, old); err != nil {
				return err
			}
		}
		ref := store.AssetRef{Kind: store.KindEInk, ID: d.ID}
		if _, err := t.Attach(mac, store.KindEInk, ref, t.Now, "replaced"); err != nil {
			return apperr.Conflict("mac %s cannot be attached: %s", mac, err.Error())
		}
		d.MAC = mac
		if err := t.PutEInk(d, old); err != nil {
			return err
		}
		p, err := t.EInkPollState(d.ID)
		if err != nil {
			return err
		}
		p.RenderedHash = ""
		// The incoming device may have drawn a version on a row it left
		// (a spare whose pending row was deleted): the row goes on past
		// the one it keeps, or its first screen here could carry the
		// number it drew last and not be drawn (a review).
		cur := p.Version
		if st := s.polls[d.ID]; st != nil {
			st.mu.Lock()
			cur = st.p.Version
			st.mu.Unlock()
		}
		start := replacedStart(cur, keptVersion(t, mac))
		p.Version, p.Fresh = start, true
		if err := t.PutEInkPollState(d.ID, &p); err != nil {
			return err
		}
		if st := s.polls[d.ID]; st != nil {
			st.mu.Lock()
			hash, rendered, version, fresh, was := st.hash, st.p.RenderedHash, st.p.Version, st.p.Fresh, st.mac
			st.hash, st.p.RenderedHash = 0, ""
			st.p.Version, st.p.Fresh = start, true
			st.mac = mac
			st.mu.Unlock()
			// No poll changes st before the undo: the old device's
			// go round (st.mac), and the new one's wait for s.mu.
			s.onFail(func() {
				st.mu.Lock()
				st.hash, st.p.RenderedHash, st.p.Version, st.p.Fresh, st.mac = hash, rendered, version, fresh, was
				st.mu.Unlock()
			})
		}
		v, err = s.view(t, d)
		return err
	})
	return v, err
}
