package appliance

import (
	"context"

	"beaconhub/appliance/config"
	"beaconhub/appliance/eink"
	"beaconhub/store"
)

// buildEink wires the e-ink displays wherever the database runs. Poll
// tracking goes through the group-commit writer; without ingest there is
// none yet, so the displays get their own (closed before the store).
// Sensor elements read the recorder when the sensors feature runs.
func (a *App) buildEink() {
	w := a.writer
	if w == nil {
		w = store.NewWriter(a.db, store.WriterOptions{Logger: a.log})
		a.onStop(func(context.Context) error { return w.Close() })
	}
	// The neutral screen names the product as the UI does (a branded
	// build showed "BeaconHub": a review).
	o := eink.Options{DB: a.db, Writer: w, Clock: a.clock, Logger: a.log, ProductName: config.ActiveBrand().Product}
	if a.recorder != nil {
		o.Readings = a.recorder // only when it exists: no typed nil in the interface
	}
	a.eink = eink.New(o)
	if a.pipeline != nil {
		a.renameAlso(a.eink) // a layout's sensor follows a remint at once
	}
}

// EInk returns the e-ink service (nil without a database).
func (a *App) EInk() *eink.Service { return a.eink }
