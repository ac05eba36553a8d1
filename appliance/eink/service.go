// Package eink owns the e-ink displays: the device poll (registration,
// rendering the designer layout with live sensor values, the change
// version, the Windows-1250 reply), the admin operations on displays
// (update, state, replace-device, delete, uid reminting) and the saved
// layout templates. The wire contract is shared/contracts/eink-device.md.
package eink

import (
	"log/slog"
	"strconv"
	"sync"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Defaults of a new display and of the neutral screens.
const (
	DefaultWidth    = 800
	DefaultHeight   = 480
	DefaultValidity = 300
	// MaxPending is the spec's cap on auto-registered pending rows.
	MaxPending = 100
	// pendingValidity is short so that an approval shows within a minute;
	// blockedValidity is long so a blocked display costs almost nothing.
	pendingValidity = 60
	blockedValidity = 3600
	// cacheTTL bounds how long a poll trusts its cached display: sensor
	// uids in a layout are re-resolved through the alias table this often,
	// so a sensor reminted elsewhere keeps showing values.
	cacheTTL = time.Minute
)

// Writer is the group-commit writer (store.Writer).
type Writer interface {
	Do(fn func(tx *bolt.Tx) error, done func(error))
}

// Options are the service's dependencies.
type Options struct {
	DB     *store.DB
	Writer Writer
	// Readings is nil when the sensors feature is off: sensor elements
	// then show "--".
	Readings    Readings
	Clock       clock.Clock
	Logger      *slog.Logger
	ProductName string // neutral screen title; default "BeaconHub"
}

// Service is the e-ink subsystem.
type Service struct {
	db      *store.DB
	w       Writer
	rd      Readings
	clock   clock.Clock
	log     *slog.Logger
	product string

	// mu guards byMAC and polls. Admin writes hold it for the whole
	// transaction, so a poll never caches a record older than the last
	// committed admin change.
	mu    sync.RWMutex
	byMAC map[string]*cached
	polls map[uint64]*pollState
	// undo holds, during an admin write, what puts the poll states back
	// as the store has them if the commit fails (adminWrite).
	undo []func()
}

// cached is a display as a poll needs it: the record and its parsed layout.
type cached struct {
	disp     store.EInkDisplay
	layout   *Layout
	loadedAt time.Time
}

// pollState is the in-memory, authoritative copy of a display's poll
// record. Polls update it under mu and hand the writer at most one queued
// write per display: a burst of polls costs one row write per group commit.
type pollState struct {
	mu     sync.Mutex
	id     uint64
	p      store.EInkPoll
	hash   uint64 // p.RenderedHash parsed
	queued bool
	// mac is the device the row serves now ("" once the row is
	// deleted): a poll rendered for another device (replaced away, or
	// replaced in, while it rendered) is not served this row's version
	// (a review: the old device's poll cleared the new one's Fresh, and a
	// spare's poll served after its removal went unkept).
	mac string
	// committing is closed when the newest version's commit is in: a
	// poll served that version while it was not waited too (a review:
	// a device retrying a slow answer got it before it was stored).
	committing chan struct{}
}

// New builds the service.
func New(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ProductName == "" {
		o.ProductName = "BeaconHub"
	}
	return &Service{db: o.DB, w: o.Writer, rd: o.Readings, clock: o.Clock, log: o.Logger, product: o.ProductName,
		byMAC: map[string]*cached{}, polls: map[uint64]*pollState{}}
}

// adminWrite runs fn in one registry transaction with the poll cache
// locked, then drops the cache so the next poll reloads. fn changes the
// poll states in memory inside the lock (a poll must not see the store
// and memory disagree) and says how to undo each change with onFail: a
// failed commit (a full disk) left a replaced row's state naming the new
// device while the store kept the old one, and the old device was
// answered 500 until a restart (a review).
// A panic in the transaction (recovered by the HTTP server) is a failed
// commit too: bbolt rolled back, so the undos run, and the list never
// outlives its write (a review).
func (s *Service) adminWrite(fn func(t *store.AssetTx) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	committed := false
	defer func() {
		undo := s.undo
		s.undo = nil
		clear(s.byMAC)
		if !committed {
			for i := len(undo) - 1; i >= 0; i-- {
				s.runUndo(undo[i])
			}
		}
	}()
	err := s.db.UpdateAssets(s.clock.Now(), fn)
	committed = err == nil
	return err
}

// runUndo runs one undo; a panic in it is logged, and the others still
// run (a review: one bad undo stopped the rest and stayed queued for the
// next failed write).
func (s *Service) runUndo(undo func()) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("eink: undoing an admin change after a failed commit", "panic", p)
		}
	}()
	undo()
}

// onFail registers how to undo an in-memory change should the admin
// write's commit fail; with s.mu held (adminWrite).
func (s *Service) onFail(undo func()) { s.undo = append(s.undo, undo) }

// Rename and RenamesDone (an assets.BatchRenamer, told after a remint or
// merge moved the sensor readings) drop the poll cache once per batch of
// renames: a cached layout names a sensor by its old uid, and a display
// polling more often than cacheTTL drew "--" until the entry expired,
// then the value again, two full e-ink refreshes (a review). The next
// poll re-resolves through the aliases. Once per batch: a remint apply
// renames thousands of assets, and clearing per rename took the service
// lock each time (a review measured polls 25 times slower meanwhile).
func (s *Service) Rename(_, _ string) {}

// RenamesDone: see Rename.
func (s *Service) RenamesDone() {
	s.mu.Lock()
	clear(s.byMAC)
	s.mu.Unlock()
}

// ResolveID accepts a display's numeric id or its asset_uid (also a
// former uid, which follows the remint).
func (s *Service) ResolveID(raw string) (uint64, error) {
	if id, err := strconv.ParseUint(raw, 10, 64); err == nil && id > 0 {
		return id, nil
	}
	var id uint64
	err := s.db.ViewAssets(func(t *store.AssetTx) error {
		ref, ok := t.UIDOwner(raw)
		if !ok {
			if a := t.Alias(raw); a != "" {
				ref, ok = t.UIDOwner(a)
			}
		}
		if ok && ref.Kind == store.KindEInk {
			id = ref.ID
		}
		return nil
	})
	if err == nil && id == 0 {
		err = apperr.NotFound("e-ink display %s not found", raw)
	}
	return id, err
}
