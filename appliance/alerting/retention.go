package alerting

import (
	"log/slog"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Event retention runs daily, and shortly after boot so a box that was
// off catches up. A site where a thousand beacons move all day writes a
// motion warning per beacon per dedup window: without it the database of
// a small box fills in weeks.
const (
	RetentionEvery     = 24 * time.Hour
	RetentionBootDelay = 15 * time.Minute
	// retentionBatch events go per write transaction: the ingest writer
	// shares bbolt's one write lock.
	retentionBatch = 2000
)

// Retention deletes old events (store.DeleteEventsBefore). The windows
// are read at each run, so a changed setting applies at the next one.
type Retention struct {
	db   *store.DB
	clk  clock.Clock
	log  *slog.Logger
	days func() (all, warnings int)
	job  *clock.Job
}

// NewRetention returns the job; Start arms it.
func NewRetention(db *store.DB, clk clock.Clock, log *slog.Logger, days func() (all, warnings int)) *Retention {
	if log == nil {
		log = slog.Default()
	}
	r := &Retention{db: db, clk: clk, log: log, days: days}
	r.job = clock.NewJob(clk, RetentionBootDelay, RetentionEvery, r.tick)
	return r
}

// Start arms the job; Stop cancels it.
func (r *Retention) Start() { r.job.Start() }

// Stop cancels the next run.
func (r *Retention) Stop() { r.job.Stop() }

func (r *Retention) tick() {
	if n, err := r.Run(); err != nil {
		r.log.Warn("events: retention", "err", err)
	} else if n > 0 {
		r.log.Info("events: retention", "deleted", n)
	}
}

// Run deletes what is past its window and returns how many events went.
func (r *Retention) Run() (int, error) {
	all, warn := r.days()
	if all <= 0 || warn <= 0 {
		return 0, nil
	}
	now := r.clk.Now().UnixMilli()
	allBefore := now - int64(all)*86400e3
	warnBefore := now - int64(min(warn, all))*86400e3
	total := 0
	for {
		var n int
		var more bool
		err := r.db.Update(func(tx *bolt.Tx) error {
			var err error
			n, more, err = store.DeleteEventsBefore(tx, warnBefore, allBefore, retentionBatch)
			return err
		})
		total += n
		if err != nil || !more {
			return total, err
		}
	}
}
