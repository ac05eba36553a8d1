package push

import (
	"time"

	"beaconhub/store"
)

// state is the persisted cadence state (rule 2): cooldown anchors, which
// activations were announced, each bulk category's active conditions and
// changes since its last bucket, and the last digest bucket delivered.
type state struct {
	Alerted    map[string]int64           `json:"alerted"` // key -> last announced activation (ms)
	Open       map[string]bool            `json:"open"`    // activation announced, recovery not yet
	Active     map[string]map[string]Item `json:"active"`  // category -> subject -> item
	Changes    map[string][]Item          `json:"changes"` // category -> since last bucket
	LastBucket map[string]int64           `json:"last_bucket"`
	// Flap is, for a condition announced active again within the
	// cooldown window of its first announcement (announce), when that
	// window began and the cooldown then; Held its recovery, waiting for
	// the window's end.
	Flap map[string]flapWindow `json:"flaps,omitempty"`
	// Window is when each condition's cooldown window began: its last
	// activation announced as new (not a reminder, not a flap).
	Window map[string]int64        `json:"window,omitempty"`
	Held   map[string]heldRecovery `json:"held,omitempty"`
	// Critical marks active panic/watch not-seen keys, repeated on the
	// critical cooldown: in memory only, a restart dropped them to the
	// bulk sensor rule and their repeats stopped (a review).
	Critical map[string]bool `json:"critical,omitempty"`
	// Told holds, per category, last words owed to subjects nothing else
	// will speak of again (a uid change's old subject, a pending digest
	// change at a switch to individual mode), sent together as one quiet
	// message per category (tellPending).
	Told map[string][]Item `json:"told,omitempty"`
	// LastDelivery is the last acknowledged outbox publish (ms).
	LastDelivery int64 `json:"last_delivery"`
	// LastEvent is the highest event id whose press was posted or queued
	// for retry (nil until the first start that records it).
	LastEvent *uint64 `json:"last_event,omitempty"`
}

const stateName = "cadence"

func loadState(db *store.DB) (*state, error) {
	st := &state{}
	if _, err := db.PushState(stateName, st); err != nil {
		return nil, err
	}
	if st.Alerted == nil {
		st.Alerted = map[string]int64{}
	}
	if st.Open == nil {
		st.Open = map[string]bool{}
	}
	if st.Active == nil {
		st.Active = map[string]map[string]Item{}
	}
	if st.Changes == nil {
		st.Changes = map[string][]Item{}
	}
	if st.LastBucket == nil {
		st.LastBucket = map[string]int64{}
	}
	if st.Window == nil {
		st.Window = map[string]int64{}
	}
	if st.Flap == nil {
		st.Flap = map[string]flapWindow{}
	}
	if st.Held == nil {
		st.Held = map[string]heldRecovery{}
	}
	if st.Critical == nil {
		st.Critical = map[string]bool{}
	}
	if st.Told == nil {
		st.Told = map[string][]Item{}
	}
	return st, nil
}

// save persists the state; called by the worker after a change.
func (s *Service) save() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.deferSave && !s.sentUnsaved {
		return // reconcile saves at its end, and after what it posted
	}
	s.sentUnsaved = false
	if err := s.db.PutPushState(stateName, s.st); err != nil {
		s.log.Error("persist push state", "err", err)
	}
}

// enqueueDurable puts digest work in the outbox (rendered, so a re-send
// after a restart is byte-identical) in the same transaction as the
// cadence state that produced it, then tries to flush it.
func (s *Service) enqueueDurable(msgs []Message) {
	if s.commitDurable(msgs) {
		s.flushOutbox()
	}
}

// commitDurable writes msgs to the outbox and the cadence state in one
// transaction; false if that failed (logged).
func (s *Service) commitDurable(msgs []Message) bool {
	cfg := s.live.Get()
	if !cfg.PushEnabled {
		msgs = nil
	}
	rows := make([]store.PushOutbox, len(msgs))
	for i, m := range msgs {
		m.Record.Seq = s.pub.NextSeq()
		r := m.Render(Topic(cfg.ServerID, m.Category))
		rows[i] = store.PushOutbox{Topic: r.Topic, Title: r.Title, Message: r.Message, Tags: r.Tags, Priority: r.Priority, Created: s.clk.Now().UnixMilli()}
	}
	s.mu.Lock()
	_, err := s.db.EnqueuePush(rows, stateName, s.st)
	s.mu.Unlock()
	if err != nil {
		s.log.Error("push outbox", "err", err)
		return false
	}
	return true
}

// flushOutbox sends queued rows oldest first and acks each after a 2xx;
// on the first retryable failure the scheduler tries again later. A row
// is deleted only after the server acknowledged it, so a restart re-sends
// exactly the rows not yet acknowledged.
func (s *Service) flushOutbox() {
	s.mu.Lock()
	s.outTimer = nil
	s.mu.Unlock()
	base, _, open := s.laneServer(laneStaff)
	if !open {
		s.armOutbox() // held until push is on again, as the retry queue
		return
	}
	for {
		rows, err := s.db.PushOutboxPending(64)
		if err != nil {
			s.log.Error("push outbox", "err", err)
			return
		}
		if len(rows) == 0 {
			s.mu.Lock()
			s.outDelay = 0
			s.mu.Unlock()
			return
		}
		for _, row := range rows {
			r := s.markLate(Rendered{Topic: row.Topic, Title: row.Title, Message: row.Message, Tags: row.Tags, Priority: row.Priority}, row.Created)
			ctx, done := s.postCtx()
			res := s.pub.Post(ctx, base, r, true)
			done()
			if res != Sent && res != Rejected {
				s.armOutbox()
				return
			}
			if err := s.db.AckPush(row.ID); err != nil {
				s.log.Error("push outbox ack", "err", err)
				return
			}
			if res == Sent {
				s.mu.Lock()
				s.st.LastDelivery = s.clk.Now().UnixMilli()
				s.mu.Unlock()
			}
		}
		s.save()
	}
}

func (s *Service) armOutbox() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.outTimer != nil || s.stopped {
		return
	}
	s.outDelay = min(max(2*s.outDelay, 5*time.Second), 5*time.Minute)
	d := s.outDelay
	if w := s.pub.BackoffUntil(s.live.Get().PushServerURL).Sub(s.clk.Now()); w > d {
		d = w
	}
	s.outTimer = s.clk.AfterFunc(d, func() { s.do(s.flushOutbox) })
}

// OutboxLen counts unacknowledged outbox rows.
func (s *Service) OutboxLen() int {
	rows, _ := s.db.PushOutboxPending(1 << 20)
	return len(rows)
}
