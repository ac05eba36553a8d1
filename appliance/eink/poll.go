package eink

import (
	"errors"
	"math"
	"strconv"
	"time"

	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// PollRequest is one device poll.
type PollRequest struct {
	MAC        string // normalised by ParseMAC
	Voltage    float64
	HasVoltage bool
	IP         string
}

// ParseMAC accepts exactly 12 hex digits in any case and returns them in
// upper case (the registry's MAC form).
func ParseMAC(s string) (string, bool) {
	if len(s) != 12 {
		return "", false
	}
	var b [12]byte
	for i := 0; i < 12; i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9', c >= 'A' && c <= 'F':
		case c >= 'a' && c <= 'f':
			c -= 'a' - 'A'
		default:
			return "", false
		}
		b[i] = c
	}
	if string(b[:]) == s {
		return s, true // already upper case: no allocation
	}
	return string(b[:]), true
}

// ParseVoltage accepts a decimal number of volts between 0 and 100; a
// value outside that (or not a number) is ignored rather than refused,
// because a device with a flaky ADC should still get its screen.
func ParseVoltage(s string) (float64, bool) {
	if s == "" || len(s) > 32 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || v < 0 || v > 100 {
		return 0, false
	}
	return v, true
}

// Poll answers one device poll: it appends the device JSON (Windows-1250)
// to dst. An unknown MAC is registered as pending while fewer than
// MaxPending rows are pending; otherwise it gets the neutral screen and
// nothing is stored.
func (s *Service) Poll(dst []byte, req PollRequest) ([]byte, error) {
	base := len(dst)
	for range 3 {
		out, err, again := s.poll(dst, req)
		if !again {
			return out, err
		}
		dst = out[:base] // the row changed devices while it rendered: again
	}
	return dst, errors.New("eink: the display's device keeps changing")
}

func (s *Service) poll(dst []byte, req PollRequest) (out []byte, err error, again bool) {
	now := s.clock.Now()
	c, st, err := s.lookup(req.MAC, now)
	if err != nil {
		return dst, err, false
	}
	if c == nil {
		ok, kept, err := s.register(req.MAC, now)
		if err != nil {
			return dst, err, false
		}
		if !ok {
			d := store.EInkDisplay{MAC: req.MAC, State: store.EInkPending, Width: DefaultWidth, Height: DefaultHeight}
			sc := s.neutral(&d)
			dst, _ = render(dst, &sc, nil)
			// Past a version the device keeps from a row it left, or it
			// may not draw this screen (a review).
			return finish(dst, nextVersion(kept)), nil, false
		}
		if c, st, err = s.lookup(req.MAC, now); err != nil || c == nil {
			return dst, errors.Join(err, errors.New("eink: registered display vanished")), false
		}
	}
	var sc screen
	rd := s.rd
	if c.disp.State == store.EInkApproved {
		sc = screen{validity: c.disp.Validity, rotation: c.disp.Rotation, width: c.disp.Width, height: c.disp.Height, layout: c.layout}
	} else {
		sc, rd = s.neutral(&c.disp), nil
	}
	dst, sum := render(dst, &sc, rd)

	st.mu.Lock()
	if st.mac != req.MAC {
		st.mu.Unlock()
		s.forget(req.MAC)
		return dst, nil, true
	}
	st.p.Fresh = false // served: the row's versions are this device's now
	bumped := sum != st.hash || st.p.Version == 0
	var committed chan struct{}
	if bumped {
		st.p.Version = nextVersion(st.p.Version)
		st.hash, st.p.RenderedHash = sum, strconv.FormatUint(sum, 16)
		committed = make(chan struct{})
		st.committing = committed
	}
	pending := st.committing
	ms := now.UnixMilli()
	if st.p.FirstSeen == 0 {
		st.p.FirstSeen = ms
	}
	st.p.LastSeen = ms
	st.p.PollCount++
	if req.HasVoltage {
		if st.p.LastVoltage == nil {
			st.p.LastVoltage = new(float64)
		}
		*st.p.LastVoltage = req.Voltage
	}
	if req.IP != st.p.LastIP {
		st.p.LastIP = req.IP
	}
	version := st.p.Version
	queue := !st.queued
	st.queued = true
	st.mu.Unlock()
	switch {
	case bumped:
		// A new version is committed before it is served: written after
		// the reply, a crash in between handed the same number out again
		// after the restart, for other content, and the device kept its
		// stale screen (a review). Content changes are rare; a poll that
		// draws one waits for a group commit.
		done := make(chan error, 1)
		s.w.Do(st.flush, func(err error) { done <- err })
		if err := <-done; err != nil {
			s.log.Warn("eink: storing a display's new version", "mac", req.MAC, "err", err)
		}
		st.mu.Lock()
		if st.committing == committed {
			st.committing = nil
		}
		st.mu.Unlock()
		close(committed)
	case pending != nil:
		// Served the version another poll is committing: after it.
		if queue {
			s.w.Do(st.flush, nil)
		}
		<-pending
	case queue:
		s.w.Do(st.flush, nil)
	}
	return finish(dst, version), nil, false
}

// forget drops mac's cache entry, so the next lookup reads the store.
func (s *Service) forget(mac string) {
	s.mu.Lock()
	delete(s.byMAC, mac)
	s.mu.Unlock()
}

// flush writes the current poll state; the writer runs it inside a group
// commit. It writes whatever is current when it runs, so it is idempotent
// and every poll queued before it is covered.
func (st *pollState) flush(tx *bolt.Tx) error {
	st.mu.Lock()
	p := st.p
	if p.LastVoltage != nil {
		v := *p.LastVoltage
		p.LastVoltage = &v
	}
	st.queued = false
	st.mu.Unlock()
	return store.PutEInkPoll(tx, st.id, &p)
}

// lookup returns the cached display of mac and its poll state, loading
// both on a miss or when the cache entry is older than cacheTTL. A nil
// display means the MAC is unknown.
func (s *Service) lookup(mac string, now time.Time) (*cached, *pollState, error) {
	s.mu.RLock()
	c := s.byMAC[mac]
	var st *pollState
	if c != nil {
		st = s.polls[c.disp.ID]
	}
	s.mu.RUnlock()
	if c != nil && st != nil && now.Sub(c.loadedAt) < cacheTTL {
		return c, st, nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.byMAC, mac)
	err := s.db.ViewAssets(func(t *store.AssetTx) error {
		id := t.EInkIDByMAC(mac)
		if id == 0 {
			return nil
		}
		d, err := t.EInk(id)
		if err != nil {
			return err
		}
		l, err := parseLayout(d.Layout)
		if err != nil {
			s.log.Warn("e-ink layout unreadable; showing it empty", "mac", mac, "err", err)
			l = &Layout{}
		}
		resolveAliases(t, l)
		c = &cached{disp: *d, layout: l, loadedAt: now}
		if st = s.polls[id]; st == nil {
			p, err := t.EInkPollState(id)
			if err != nil {
				return err
			}
			h, _ := strconv.ParseUint(p.RenderedHash, 16, 64)
			st = &pollState{id: id, p: p, hash: h, mac: d.MAC}
			s.polls[id] = st
		}
		s.byMAC[mac] = c
		return nil
	})
	if err != nil || c == nil {
		return nil, nil, err
	}
	return c, st, nil
}

// resolveAliases follows remints of the sensors a layout shows, so a
// layout saved before a sensor got its real uid keeps its values.
func resolveAliases(t *store.AssetTx, l *Layout) {
	for i := range l.Objects {
		o := &l.Objects[i]
		if o.T != sensorPrim {
			continue
		}
		if _, ok := t.UIDOwner(o.SensorUID); !ok {
			if a := t.Alias(o.SensorUID); a != "" {
				o.SensorUID = a
			}
		}
	}
}

// register creates a pending row for a new MAC with a LEGACY- uid and an
// open device assignment. It reports false, storing nothing, when
// MaxPending rows are pending or the device cannot be attached (a MAC that
// belongs to another kind of asset, or a retired device). The count is
// re-checked inside the write transaction, which bbolt serialises, so
// concurrent polls from new MACs never create more than MaxPending rows.
func (s *Service) register(mac string, now time.Time) (registered bool, kept int, err error) {
	full := false
	if err := s.db.ViewAssets(func(t *store.AssetTx) error {
		full = t.EInkPendingCount() >= MaxPending
		kept = keptVersion(t, mac)
		return nil
	}); err != nil || full {
		return false, kept, err
	}
	refused := false
	err = s.db.UpdateAssets(now, func(t *store.AssetTx) error {
		if t.EInkIDByMAC(mac) != 0 {
			return nil // registered by a concurrent poll
		}
		if t.EInkPendingCount() >= MaxPending {
			full = true
			return nil
		}
		d := &store.EInkDisplay{MAC: mac, AssetUID: t.UniqueLegacyUID(mac), State: store.EInkPending,
			Width: DefaultWidth, Height: DefaultHeight, Validity: DefaultValidity}
		if err := t.PutEInk(d, ""); err != nil {
			return err
		}
		// A device back after its row was deleted starts past the version
		// it last drew there (store.Device.EInkVersion).
		if k := keptVersion(t, mac); k > 0 {
			if err := t.PutEInkPollState(d.ID, &store.EInkPoll{Version: k}); err != nil {
				return err
			}
		}
		ref := store.AssetRef{Kind: store.KindEInk, ID: d.ID}
		if err := t.ClaimUID(d.AssetUID, ref); err != nil {
			return err
		}
		if _, err := t.Attach(mac, store.KindEInk, ref, t.Now, "registered by poll"); err != nil {
			refused = true
			return err
		}
		return nil
	})
	if refused {
		s.log.Info("e-ink poll from a MAC that cannot be registered", "mac", mac, "err", err)
		return false, kept, nil
	}
	if err != nil {
		return false, kept, err
	}
	return !full, kept, nil
}
