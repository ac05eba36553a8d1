package sensors

import (
	"log/slog"
	"time"

	"beaconhub/appliance/clock"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// Compaction schedule: daily, and RetentionBootDelay after start so a box
// that was off for weeks catches up without waiting a day.
const (
	RetentionEvery     = 24 * time.Hour
	RetentionBootDelay = 10 * time.Minute
	// retentionBatch series are trimmed per write transaction: the ingest
	// writer shares the one bbolt write lock, and a site-wide delete in one
	// transaction would hold it for seconds.
	retentionBatch = 64
)

// Retention deletes raw history older than a configurable number of days.
// bbolt returns the freed pages to its freelist, which later writes reuse,
// so the file stops growing once the retention window is full.
type Retention struct {
	db   *store.DB
	clk  clock.Clock
	log  *slog.Logger
	days func() int
	job  *clock.Job
}

// NewRetention returns a compactor; days is read at each run, so a changed
// setting applies at the next one.
func NewRetention(db *store.DB, clk clock.Clock, log *slog.Logger, days func() int) *Retention {
	if log == nil {
		log = slog.Default()
	}
	r := &Retention{db: db, clk: clk, log: log, days: days}
	r.job = clock.NewJob(clk, RetentionBootDelay, RetentionEvery, r.tick)
	return r
}

// Start arms the compaction timer.
func (r *Retention) Start() { r.job.Start() }

// Stop cancels it.
func (r *Retention) Stop() { r.job.Stop() }

func (r *Retention) tick() {
	if n, err := r.Compact(); err != nil {
		r.log.Warn("sensors: history compaction", "err", err)
	} else if n > 0 {
		r.log.Info("sensors: history compaction", "deleted", n)
	}
}

// Compact deletes readings (and sensor-condition records) older than the
// retention and returns how many readings went.
func (r *Retention) Compact() (int, error) {
	days := r.days()
	if days <= 0 {
		return 0, nil
	}
	before := r.clk.Now().UnixMilli() - int64(days)*86400e3
	keys, err := Keys(r.db, nil, 0)
	if err != nil {
		return 0, err
	}
	total := 0
	// Condition transitions follow the same window: the active set is
	// kept, only old records go.
	err = r.db.Update(func(tx *bolt.Tx) error {
		_, err := store.DeleteSensorConditionRecordsBefore(tx, before)
		return err
	})
	if err != nil {
		return 0, err
	}
	for i := 0; i < len(keys); i += retentionBatch {
		batch := keys[i:min(i+retentionBatch, len(keys))]
		err := r.db.Update(func(tx *bolt.Tx) error {
			for _, k := range batch {
				n, err := store.DeleteHistoryBefore(tx, k.UID, k.Metric, before)
				if err != nil {
					return err
				}
				total += n
			}
			return nil
		})
		if err != nil {
			return total, err
		}
	}
	return total, nil
}
