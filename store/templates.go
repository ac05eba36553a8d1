package store

import (
	"encoding/json"
	"errors"

	bolt "go.etcd.io/bbolt"
)

// Interface templates and their assignment to users. The assignment lives
// in its own bucket (user id -> template id) rather than on the user
// record, so template code never rewrites accounts; a deleted user's
// leftover entry is ignored (user ids are never reused) and dropped on the
// next write that touches it.
var (
	bUITemplates     = []byte("ui_templates")      // id -> UITemplate
	bUITemplateUsers = []byte("ui_template_users") // user id -> template id
)

// UITemplate is an interface template. Definition is the canonical JSON
// produced by uitemplates.Parse.
type UITemplate struct {
	ID         uint64          `json:"id"`
	Name       string          `json:"name"`
	Role       string          `json:"role"`
	Definition json.RawMessage `json:"definition"`
	CreatedAt  int64           `json:"created_at"` // Unix ms
	UpdatedAt  int64           `json:"updated_at"` // Unix ms
}

// TemplateInUseError refuses deleting a template users are assigned to.
type TemplateInUseError struct{ UserIDs []uint64 }

func (e *TemplateInUseError) Error() string { return "template is assigned to users" }

// ErrRoleMismatch refuses assigning a template to a user of another role.
var ErrRoleMismatch = errors.New("template role does not match the user's role")

// CreateUITemplate stores t with a new id.
func (db *DB) CreateUITemplate(t UITemplate) (UITemplate, error) {
	err := db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bUITemplates)
		if err != nil {
			return err
		}
		if t.ID, err = b.NextSequence(); err != nil {
			return err
		}
		return putJSON(b, itob(t.ID), &t)
	})
	return t, err
}

// GetUITemplate returns the template with id, or ErrNotFound.
func (db *DB) GetUITemplate(id uint64) (*UITemplate, error) {
	var t UITemplate
	err := db.View(func(tx *bolt.Tx) error {
		b := tx.Bucket(bUITemplates)
		if b == nil {
			return ErrNotFound
		}
		return getJSON(b, itob(id), &t)
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// ListUITemplates returns every template in id order.
func (db *DB) ListUITemplates() ([]UITemplate, error) {
	var out []UITemplate
	err := db.View(func(tx *bolt.Tx) error {
		var err error
		out, err = navList[UITemplate](tx, bUITemplates, nil)
		return err
	})
	return out, err
}

// UpdateUITemplate applies fn to the stored template in one transaction.
func (db *DB) UpdateUITemplate(id uint64, fn func(t *UITemplate) error) (*UITemplate, error) {
	var t UITemplate
	err := db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bUITemplates)
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(id), &t); err != nil {
			return err
		}
		if err := fn(&t); err != nil {
			return err
		}
		t.ID = id
		return putJSON(b, itob(id), &t)
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// DeleteUITemplate removes a template no existing user is assigned to;
// otherwise it returns *TemplateInUseError listing them.
func (db *DB) DeleteUITemplate(id uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bUITemplates)
		if b == nil || b.Get(itob(id)) == nil {
			return ErrNotFound
		}
		var inUse []uint64
		if a := tx.Bucket(bUITemplateUsers); a != nil {
			var stale [][]byte
			_ = a.ForEach(func(k, v []byte) error {
				if btoi(v) != id {
					return nil
				}
				if tx.Bucket(bUsers).Get(k) == nil {
					stale = append(stale, clone(k))
				} else {
					inUse = append(inUse, btoi(k))
				}
				return nil
			})
			for _, k := range stale {
				if err := a.Delete(k); err != nil {
					return err
				}
			}
		}
		if len(inUse) > 0 {
			return &TemplateInUseError{UserIDs: inUse}
		}
		return b.Delete(itob(id))
	})
}

// AssignUITemplate gives user userID the template templateID (0 removes
// the assignment). The template's role must be the user's role.
func (db *DB) AssignUITemplate(userID, templateID uint64) error {
	return db.Update(func(tx *bolt.Tx) error {
		var u User
		if err := getJSON(tx.Bucket(bUsers), itob(userID), &u); err != nil {
			return err
		}
		a, err := tx.CreateBucketIfNotExists(bUITemplateUsers)
		if err != nil {
			return err
		}
		if templateID == 0 {
			return a.Delete(itob(userID))
		}
		var t UITemplate
		b := tx.Bucket(bUITemplates)
		if b == nil {
			return ErrNotFound
		}
		if err := getJSON(b, itob(templateID), &t); err != nil {
			return err
		}
		if t.Role != u.Role {
			return ErrRoleMismatch
		}
		return a.Put(itob(userID), itob(templateID))
	})
}

// UserUITemplate returns the template assigned to userID, or ErrNotFound.
func (db *DB) UserUITemplate(userID uint64) (*UITemplate, error) {
	var t UITemplate
	err := db.View(func(tx *bolt.Tx) error {
		a, b := tx.Bucket(bUITemplateUsers), tx.Bucket(bUITemplates)
		if a == nil || b == nil {
			return ErrNotFound
		}
		id := a.Get(itob(userID))
		if id == nil {
			return ErrNotFound
		}
		return getJSON(b, id, &t)
	})
	if err != nil {
		return nil, err
	}
	return &t, nil
}

// UITemplateUsers returns the ids of existing users assigned to template
// id, in id order.
func (db *DB) UITemplateUsers(id uint64) ([]uint64, error) {
	out := []uint64{}
	err := db.View(func(tx *bolt.Tx) error {
		a := tx.Bucket(bUITemplateUsers)
		if a == nil {
			return nil
		}
		return a.ForEach(func(k, v []byte) error {
			if btoi(v) == id && tx.Bucket(bUsers).Get(k) != nil {
				out = append(out, btoi(k))
			}
			return nil
		})
	})
	return out, err
}
