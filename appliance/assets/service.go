package assets

import (
	"errors"
	"log/slog"
	"sync"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/store"
)

// Renamer moves in-memory per-asset state to a new uid (the ingest
// pipeline's last-seen times, the sensor recorder's latest readings).
type Renamer interface {
	Rename(oldUID, newUID string)
}

// LatestReadings is the sensor recorder's latest reading per asset and
// metric. A remint renames it; a merge folds a source in with the
// history's exclusive window: only the source's readings newer than after
// were kept, so only those may become the survivor's latest.
type LatestReadings interface {
	Renamer
	MergeLatest(oldUID, newUID string, after int64)
}

// LastSeenSource is the pipeline's in-memory last-seen table.
type LastSeenSource interface {
	Renamer
	Asset(uid string) int64
}

// DiscoverySource is the pipeline's list of MACs heard but not registered.
type DiscoverySource interface {
	List() []store.DiscoveredDevice
	Forget(mac string, gw bool)
}

// Flusher waits until every write queued so far has committed (the
// group-commit writer).
type Flusher interface {
	Flush() error
}

// IngestHooks connect the service to a running ingest pipeline. Every
// field is optional; nil interfaces are skipped (pass no typed nils).
type IngestHooks struct {
	LastSeen  LastSeenSource
	Discovery DiscoverySource
	Writer    Flusher
	Recorder  LatestReadings
	// Followers hold other per-asset state keyed by uid (sensor and
	// health condition sets, push cadence, the tracking engine). They
	// follow every rename, merges included: where the new uid already
	// has state, the survivor's wins. Without them a condition raised
	// under the old uid would never resolve and would be raised again
	// under the new one: a doubled alert.
	Followers []Renamer
}

// Options configure a Service.
type Options struct {
	DB       *store.DB
	Registry *Registry // built from DB when nil
	Clock    clock.Clock
	Logger   *slog.Logger
}

// Service is the registry: every create, update, delete, replace, merge and
// remint goes through it, runs in one store transaction per asset, and
// reloads the MAC -> asset cache before it returns, so the next report
// ingest resolves already sees the change.
type Service struct {
	db    *store.DB
	reg   *Registry
	clock clock.Clock
	log   *slog.Logger
	mu    sync.Mutex // one registry write at a time: plans and applies see a stable registry
	hooks IngestHooks

	// remintHook, when set (tests), runs inside each remint transaction
	// after the rewrite; an error rolls that asset back and stops apply.
	remintHook func(n int) error
}

// NewService builds the registry service over db.
func NewService(o Options) (*Service, error) {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Registry == nil {
		r, err := NewRegistry(o.DB)
		if err != nil {
			return nil, err
		}
		o.Registry = r
	}
	return &Service{db: o.DB, reg: o.Registry, clock: o.Clock, log: o.Logger}, nil
}

// Connect attaches the ingest pipeline; call it before serving requests.
func (s *Service) Connect(h IngestHooks) { s.hooks = h }

// Registry returns the MAC -> asset cache the pipeline resolves through.
func (s *Service) Registry() *Registry { return s.reg }

func (s *Service) now() int64 { return s.clock.Now().UnixMilli() }

// rename is one uid change to follow outside the transaction.
type rename struct {
	old, new string
	// merge folds old into an existing new; the recorder keeps old's
	// latest readings newer than after (math.MinInt64: no bound).
	merge bool
	after int64
	// deviceMoved: the merge gave new old's device (the last source's
	// MAC), so what followers knew of new's device is a detached tag's.
	deviceMoved bool
}

// effects collects what a committed write must still do in memory.
type effects struct {
	renames []rename
	forget  []store.DiscoveredDevice // MACs that became assets
}

// write runs fn in one transaction, then reloads the cache and applies
// the in-memory effects. A failed fn writes nothing.
func (s *Service) write(fn func(t *store.AssetTx, fx *effects) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writeLocked(fn)
}

func (s *Service) writeLocked(fn func(t *store.AssetTx, fx *effects) error) error {
	fx := &effects{}
	if err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error { return fn(t, fx) }); err != nil {
		return err
	}
	s.afterCommit(fx)
	return nil
}

func (s *Service) view(fn func(t *store.AssetTx) error) error { return s.db.ViewAssets(fn) }

// afterCommit makes the cache and the in-memory state follow a commit. The
// commit already happened, so failures here are logged, not returned: the
// next write reloads again and the next remint apply sweeps again.
func (s *Service) afterCommit(fx *effects) {
	s.prepareRenames(fx.renames)
	if err := s.reg.Reload(); err != nil {
		s.log.Error("asset cache reload failed", "err", err)
	}
	if d := s.hooks.Discovery; d != nil {
		for _, f := range fx.forget {
			d.Forget(f.MAC, f.IsGateway)
		}
	}
	if len(fx.renames) > 0 {
		s.sweep(fx.renames)
	}
	s.reloaded()
}

// reloaded tells the ReloadFollowers, after the renames have moved the
// followers' state: a follower that checks its uids against the
// registry finds them under their new names.
func (s *Service) reloaded() {
	for _, f := range s.hooks.Followers {
		if rf, ok := f.(ReloadFollower); ok {
			rf.RegistryReloaded()
		}
	}
}

// ReloadFollower is a follower told after every registry write has been
// reloaded (and its renames followed): the tracking engine ends the stay
// of a beacon deleted, deactivated or given an untracked type at once,
// where it otherwise stayed located until its timeout.
type ReloadFollower interface {
	RegistryReloaded()
}

// sweep catches writes made under an old uid by reports that were resolved
// against the cache before the reload: it waits for the writer to commit
// what is queued, moves anything left under the old uid, then moves the
// in-memory state.
func (s *Service) sweep(rs []rename) {
	if w := s.hooks.Writer; w != nil {
		if err := w.Flush(); err != nil {
			s.log.Warn("writer flush before uid sweep failed", "err", err)
		}
	}
	var dropped []int // per rename; logged once committed
	err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
		dropped = make([]int, len(rs))
		for i, r := range rs {
			// A merge's exclusive windows hold for what the sweep moves
			// too: a source's stay written after the merge would
			// overlap the survivor's (a review).
			if r.merge {
				n, err := t.DropZoneIntervalsBeforeUID(r.old, r.new)
				if err != nil {
					return err
				}
				dropped[i] = n
			}
			if _, err := t.RenameUID(r.old, r.new); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		s.log.Error("uid sweep failed; the next remint apply retries it", "err", err)
	} else {
		for i, n := range dropped {
			if n > 0 { // not in the merge's plan: written after it
				s.log.Info("merge: zone stays written under the source after the merge dropped by its windows", "asset_uid", rs[i].new, "source_uid", rs[i].old, "stays_dropped", n)
			}
		}
	}
	s.moveLive(rs)
	for _, r := range rs {
		s.log.Info("asset uid changed", "asset_uid", r.new, "old_uid", r.old)
	}
}

// prepareRenames tells the PreRenamer followers of renames about to be
// made visible by a registry reload; call it before the reload.
func (s *Service) prepareRenames(rs []rename) {
	for _, f := range s.hooks.Followers {
		if p, ok := f.(PreRenamer); ok {
			for _, r := range rs {
				p.PrepareRename(r.old, r.new)
			}
		}
	}
}

// PreRenamer is a follower whose state must be reachable under the new
// uid before the reload makes MACs resolve to it, rather than only after
// the uid sweep (two commits later): alerting's dedup windows, where a
// press's next report in between would otherwise open a second event.
// PrepareRename makes the state reachable under both uids; Rename then
// moves it as for any follower.
type PreRenamer interface {
	PrepareRename(oldUID, newUID string)
}

// MergeRenamer is a follower for which a merge is not a rename: told
// MergeRename instead of Rename when old was merged into new, an asset
// that has state of its own. The tracking engine ends both live stays
// there, since which tag the asset now is depends on the device the
// merge kept. deviceMoved says new now has old's device: new's own state
// then belongs to a tag the merge detached.
type MergeRenamer interface {
	MergeRename(oldUID, newUID string, deviceMoved bool)
}

// BatchRenamer is a follower that keeps a snapshot derived from the
// registry: it is told once after a batch of renames, instead of rebuilding
// per rename (a remint apply of thousands of legacy assets).
type BatchRenamer interface {
	Renamer
	RenamesDone()
}

// moveLive makes the in-memory state follow committed renames: the
// pipeline's last-seen times, the recorder's latest readings (for a
// merge, the source's that the history kept) and every follower.
func (s *Service) moveLive(rs []rename) {
	for _, r := range rs {
		if l := s.hooks.LastSeen; l != nil {
			l.Rename(r.old, r.new)
		}
		if rec := s.hooks.Recorder; rec != nil {
			if r.merge {
				rec.MergeLatest(r.old, r.new, r.after)
			} else {
				rec.Rename(r.old, r.new)
			}
		}
		for _, f := range s.hooks.Followers {
			if mr, ok := f.(MergeRenamer); ok && r.merge {
				mr.MergeRename(r.old, r.new, r.deviceMoved)
				continue
			}
			f.Rename(r.old, r.new)
		}
	}
	if len(rs) == 0 {
		return
	}
	for _, f := range s.hooks.Followers {
		if b, ok := f.(BatchRenamer); ok {
			b.RenamesDone()
		}
	}
}

// resolve finds the asset holding uid, following renames so that links
// made before a remint keep working.
func resolve(t *store.AssetTx, uid string) (store.AssetRef, bool) {
	if ref, ok := t.UIDOwner(uid); ok {
		return ref, true
	}
	if to := t.Alias(uid); to != "" {
		return t.UIDOwner(to)
	}
	return store.AssetRef{}, false
}

// deviceErr turns a refused attachment into a 400 naming the field.
func deviceErr(err error, field, mac string) error {
	switch {
	case errors.Is(err, store.ErrDeviceBusy):
		return apperr.InvalidField(field, "device %s is already attached to another asset (use replace-device to move it)", mac)
	case errors.Is(err, store.ErrDeviceKind):
		return apperr.InvalidField(field, "device %s is registered as another kind of asset", mac)
	case errors.Is(err, store.ErrDeviceRetired):
		return apperr.InvalidField(field, "device %s is retired", mac)
	case errors.Is(err, store.ErrDeviceInCalibration):
		return apperr.InvalidField(field, "device %s is in calibration; pass last_calibrated_at when it comes back", mac)
	}
	return err
}

// parseMAC validates a MAC from a request and returns its stored form.
func parseMAC(field, s string) (string, error) {
	mac, ok := store.NormalizeMAC(s)
	if !ok {
		return "", apperr.InvalidField(field, "%s must be 12 hex digits (optionally separated by ':' or '-'), got %q", field, s)
	}
	return mac, nil
}
