package appliance

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/appliance/push"
	"beaconhub/store"
)

// buildPush wires the push subsystem to its sources: sensor conditions,
// health conditions and committed alerting events. Called at the end of
// buildAlerting, before the pipeline starts, so no transition is missed.
func (a *App) buildPush() error {
	if a.monitor == nil {
		return nil
	}
	sp := a.monitor.Push()
	pub := push.NewPublisher(a.live, a.clock, sp.Transport(), sp, a.log.With("component", "push"))
	svc, err := push.New(a.live, a.clock, a.db, pub, a.log.With("component", "push"))
	if err != nil {
		return err
	}
	a.pushIDs = &pushIdentity{db: a.db, clock: a.clock}
	svc.Identify = a.pushIDs.device
	svc.Alias = a.pushIDs.alias
	sp.SetQueue(svc.Held, svc.ServerAccepted, svc.ServerLimited)
	a.monitor.Conditions().Subscribe(svc.OnHealth)
	if c := a.SensorConditions(); c != nil {
		c.Subscribe(svc.OnSensor)
	}
	if a.events != nil {
		a.events.OnCommitted(svc.OnEvent)
	}
	a.push = svc
	return nil
}

// startPush starts the worker, the outbox re-send and the digest
// scheduler; stopPush ends them.
func (a *App) startPush() {
	if a.push == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	a.push.Start(ctx)
	a.pushMu.Lock()
	a.pushCancel = cancel
	a.pushMu.Unlock()
}

// stopPush ends the push worker once the store writer has closed, so that
// a press committed while ingest drains at shutdown is still handed to
// push (stopped first, as it was, push dropped those). Work still queued
// then runs with its context cancelled: an alert it cannot post goes to
// the persisted retry queue and is sent at the next start.
func (a *App) stopPush() {
	a.pushMu.Lock()
	cancel := a.pushCancel
	a.pushCancel = nil
	a.pushMu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-a.push.Done()
}

// Push returns the push service (nil when nothing ingests).
func (a *App) Push() *push.Service { return a.push }

// pushIdentity resolves condition subjects (asset_uid or MAC) to devices
// from a beacon list refreshed at most once a minute, so a burst of
// transitions does not scan the store per message, and at the next
// message after a registry write (it is a follower): refreshed only by
// the minute, a sensor created, renamed or reminted within it was pushed
// with no name, MAC or type, or the old ones (a review).
type pushIdentity struct {
	db    *store.DB
	clock clock.Clock
	stale atomic.Bool // a registry write since the list was read

	mu    sync.Mutex
	at    time.Time
	byKey map[string]push.Device
}

func (p *pushIdentity) device(subject string) push.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	if now := p.clock.Now(); now.Sub(p.at) > time.Minute || p.at.IsZero() || p.stale.Load() {
		p.stale.Store(false) // before the read: a write during it marks it again
		bs, err := p.db.ListBeacons()
		if err != nil {
			p.stale.Store(true) // read again at the next message
		} else {
			p.byKey = make(map[string]push.Device, 2*len(bs))
			for _, b := range bs {
				d := deviceOf(b)
				p.byKey[b.AssetUID], p.byKey[b.MAC] = d, d
			}
			p.at = now
		}
	}
	return p.byKey[subject]
}

// alias is the current uid of a former one ("" when uid is none), read
// from the store: at push's start (reconcile), and for a transition whose
// key push does not know (one bbolt read, transitions only).
func (p *pushIdentity) alias(uid string) string {
	var cur string
	_ = p.db.ViewAssets(func(t *store.AssetTx) error {
		cur = t.Alias(uid)
		return nil
	})
	return cur
}

// Rename (assets.Renamer) and RegistryReloaded (assets.ReloadFollower)
// mark the list stale.
func (p *pushIdentity) Rename(string, string) { p.stale.Store(true) }
func (p *pushIdentity) RegistryReloaded()     { p.stale.Store(true) }

func deviceOf(b store.Beacon) push.Device {
	return push.Device{Name: b.Name, MAC: b.MAC, AssetUID: b.AssetUID, Type: b.Type}
}
