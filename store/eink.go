package store

import (
	"encoding/json"

	bolt "go.etcd.io/bbolt"
)

// E-ink displays are split over two records so that the hot path and the
// admin never overwrite each other: EInkDisplay is what an admin edits
// (written in registry transactions), EInkPoll is what every poll updates
// (written through the group-commit Writer). A poll therefore never
// rewrites the layout, and an admin save never loses a poll count.

// E-ink display states.
const (
	EInkPending  = "pending"
	EInkApproved = "approved"
	EInkBlocked  = "blocked"
)

// EInkDisplay is the admin-edited part of an e-ink display. MAC is the
// device currently attached (12 upper-case hex digits).
type EInkDisplay struct {
	ID         uint64          `json:"id"`
	MAC        string          `json:"mac"`
	AssetUID   string          `json:"asset_uid"`
	Name       string          `json:"name"`
	State      string          `json:"state"`
	LocationID uint64          `json:"location_id,omitempty"`
	Width      int             `json:"width"`
	Height     int             `json:"height"`
	Rotation   int             `json:"rotation"`
	Validity   int             `json:"validity"`
	Layout     json.RawMessage `json:"layout,omitempty"`
	CreatedAt  int64           `json:"created_at"`
	UpdatedAt  int64           `json:"updated_at"`
}

// EInkPoll is the poll-maintained part: the rendered version and the
// tracking fields.
type EInkPoll struct {
	Version      int      `json:"version"`
	RenderedHash string   `json:"rendered_hash,omitempty"`
	LastVoltage  *float64 `json:"last_voltage,omitempty"`
	LastIP       string   `json:"last_ip,omitempty"`
	PollCount    uint64   `json:"poll_count"`
	FirstSeen    int64    `json:"first_seen,omitempty"`
	LastSeen     int64    `json:"last_seen,omitempty"`
	// Fresh: the display's device was attached (replace-device) and has
	// not been served since, so the row's versions say nothing of what
	// that device shows.
	Fresh bool `json:"fresh,omitempty"`
}

// EInkTemplate is a saved, reusable layout.
type EInkTemplate struct {
	ID        uint64          `json:"id"`
	Name      string          `json:"name"`
	Width     int             `json:"width"`
	Height    int             `json:"height"`
	Rotation  int             `json:"rotation"`
	Layout    json.RawMessage `json:"layout"`
	CreatedAt int64           `json:"created_at"`
	UpdatedAt int64           `json:"updated_at"`
}

// EInk returns the display with id (ErrNotFound).
func (t *AssetTx) EInk(id uint64) (*EInkDisplay, error) {
	var d EInkDisplay
	if err := getJSON(t.tx.Bucket(bEInk), itob(id), &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// EInkIDByMAC returns the id of the display holding mac (0 = none).
func (t *AssetTx) EInkIDByMAC(mac string) uint64 {
	return btoi(t.tx.Bucket(bEInkByMAC).Get([]byte(mac)))
}

// PutEInk stores d (assigning an id when it has none) and keeps the MAC
// and pending indexes. prevMAC is the MAC the stored record had ("" for a
// new record), so a replace-device moves the index entry.
func (t *AssetTx) PutEInk(d *EInkDisplay, prevMAC string) error {
	b := t.tx.Bucket(bEInk)
	if d.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		d.ID, d.CreatedAt = id, t.Now
	}
	d.UpdatedAt = t.Now
	byMAC := t.tx.Bucket(bEInkByMAC)
	if prevMAC != "" && prevMAC != d.MAC {
		if err := byMAC.Delete([]byte(prevMAC)); err != nil {
			return err
		}
	}
	if d.MAC != "" {
		if err := byMAC.Put([]byte(d.MAC), itob(d.ID)); err != nil {
			return err
		}
	}
	pending := t.tx.Bucket(bEInkPending)
	var err error
	if d.State == EInkPending {
		err = pending.Put(itob(d.ID), nil)
	} else {
		err = pending.Delete(itob(d.ID))
	}
	if err != nil {
		return err
	}
	return putJSON(b, itob(d.ID), d)
}

// DeleteEInk removes the display, its indexes and its poll record.
func (t *AssetTx) DeleteEInk(d *EInkDisplay) error {
	for _, del := range []struct {
		b []byte
		k []byte
	}{{bEInk, itob(d.ID)}, {bEInkPending, itob(d.ID)}, {bEInkPoll, itob(d.ID)}, {bEInkByMAC, []byte(d.MAC)}} {
		if err := t.tx.Bucket(del.b).Delete(del.k); err != nil {
			return err
		}
	}
	return nil
}

// EachEInk calls fn for every display in id order.
func (t *AssetTx) EachEInk(fn func(d *EInkDisplay) error) error {
	b := t.tx.Bucket(bEInk)
	return b.ForEach(func(k, _ []byte) error {
		var d EInkDisplay
		if err := getJSON(b, k, &d); err != nil {
			return err
		}
		return fn(&d)
	})
}

// EInkPendingCount returns how many displays are pending. The index holds
// only pending ids, so this stays cheap however many displays exist. It
// counts with a cursor, not Bucket.Stats, because Stats reads committed
// pages only and would miss rows put earlier in the same transaction.
func (t *AssetTx) EInkPendingCount() int {
	n := 0
	c := t.tx.Bucket(bEInkPending).Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		n++
	}
	return n
}

// EInkPollState returns the poll record of a display (zero when none).
func (t *AssetTx) EInkPollState(id uint64) (EInkPoll, error) {
	return GetEInkPoll(t.tx, id)
}

// GetEInkPoll reads the poll record of id inside tx (zero when none); the
// Writer's callbacks use it, as they get a bare transaction.
func GetEInkPoll(tx *bolt.Tx, id uint64) (EInkPoll, error) {
	var p EInkPoll
	err := getJSON(tx.Bucket(bEInkPoll), itob(id), &p)
	if err == ErrNotFound {
		err = nil
	}
	return p, err
}

// PutEInkPoll stores the poll record of id inside tx. It is a no-op for a
// display deleted since the poll was queued, so a late batched write
// cannot resurrect a poll record without a display.
func PutEInkPoll(tx *bolt.Tx, id uint64, p *EInkPoll) error {
	if tx.Bucket(bEInk).Get(itob(id)) == nil {
		return nil
	}
	return putJSON(tx.Bucket(bEInkPoll), itob(id), p)
}

// EInkTemplate returns the template with id (ErrNotFound).
func (t *AssetTx) EInkTemplate(id uint64) (*EInkTemplate, error) {
	var tp EInkTemplate
	if err := getJSON(t.tx.Bucket(bEInkTemplates), itob(id), &tp); err != nil {
		return nil, err
	}
	return &tp, nil
}

// PutEInkTemplate stores tp, assigning an id when it has none.
func (t *AssetTx) PutEInkTemplate(tp *EInkTemplate) error {
	b := t.tx.Bucket(bEInkTemplates)
	if tp.ID == 0 {
		id, err := b.NextSequence()
		if err != nil {
			return err
		}
		tp.ID, tp.CreatedAt = id, t.Now
	}
	tp.UpdatedAt = t.Now
	return putJSON(b, itob(tp.ID), tp)
}

// DeleteEInkTemplate removes a template.
func (t *AssetTx) DeleteEInkTemplate(id uint64) error {
	return t.tx.Bucket(bEInkTemplates).Delete(itob(id))
}

// EachEInkTemplate calls fn for every template in id order.
func (t *AssetTx) EachEInkTemplate(fn func(tp *EInkTemplate) error) error {
	b := t.tx.Bucket(bEInkTemplates)
	return b.ForEach(func(k, _ []byte) error {
		var tp EInkTemplate
		if err := getJSON(b, k, &tp); err != nil {
			return err
		}
		return fn(&tp)
	})
}

// PutEInkPollState stores the poll record of id in a registry transaction.
func (t *AssetTx) PutEInkPollState(id uint64, p *EInkPoll) error { return PutEInkPoll(t.tx, id, p) }
