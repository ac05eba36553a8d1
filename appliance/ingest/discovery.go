package ingest

import (
	"sort"
	"sync"

	"beaconhub/store"
)

// Discovery remembers MACs heard on air that no asset owns, for the import
// endpoints. It is bounded: when full, the entry heard least recently is
// forgotten, so a flood of random MACs cannot grow memory.
type Discovery struct {
	mu    sync.Mutex
	max   int
	items map[string]*store.DiscoveredDevice
	dirty bool
}

func newDiscovery(max int) *Discovery {
	return &Discovery{max: max, items: map[string]*store.DiscoveredDevice{}}
}

func (d *Discovery) restore(list []store.DiscoveredDevice) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i := range list {
		x := list[i]
		d.items[key(x.MAC, x.IsGateway)] = &x
	}
}

func key(mac string, gw bool) string {
	if gw {
		return "gw:" + mac
	}
	return mac
}

func (d *Discovery) note(mac string, gw bool, kind Kind, gateway string, rssi int, ts int64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	k := key(mac, gw)
	e, ok := d.items[k]
	if !ok {
		if len(d.items) >= d.max {
			d.evictOldest()
		}
		e = &store.DiscoveredDevice{MAC: mac, FirstSeen: ts, IsGateway: gw}
		d.items[k] = e
	}
	if ts > e.LastSeen {
		e.LastSeen = ts
		e.LastRSSI = rssi
		e.Gateway = gateway
	}
	e.Count++
	ks := kind.String()
	found := false
	for _, x := range e.Kinds {
		if x == ks {
			found = true
			break
		}
	}
	if !found {
		e.Kinds = append(e.Kinds, ks)
	}
	d.dirty = true
}

func (d *Discovery) evictOldest() {
	var oldest string
	var at int64 = 1<<63 - 1
	for k, e := range d.items {
		if e.LastSeen < at {
			oldest, at = k, e.LastSeen
		}
	}
	delete(d.items, oldest)
}

func (d *Discovery) beacon(r *Report, gw MAC, kind Kind, recv int64) {
	d.note(r.MAC.String(), false, kind, gw.String(), int(r.RSSI), r.TS)
}

func (d *Discovery) gateway(gw MAC, kind Kind, recv int64) {
	d.note(gw.String(), true, kind, gw.String(), 0, recv)
}

// List returns the discovered devices, most recently heard first.
func (d *Discovery) List() []store.DiscoveredDevice {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.listLocked()
}

func (d *Discovery) listLocked() []store.DiscoveredDevice {
	out := make([]store.DiscoveredDevice, 0, len(d.items))
	for _, e := range d.items {
		c := *e
		c.Kinds = append([]string(nil), e.Kinds...)
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].LastSeen > out[j].LastSeen })
	return out
}

// Forget removes a MAC (it became an asset).
func (d *Discovery) Forget(mac string, gw bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.items, key(mac, gw))
	d.dirty = true
}

func (d *Discovery) snapshotIfDirty() ([]store.DiscoveredDevice, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.dirty {
		return nil, false
	}
	d.dirty = false
	return d.listLocked(), true
}
