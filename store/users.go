package store

import (
	"errors"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/text/unicode/norm"
)

// User is an account of the web UI or the integration API.
type User struct {
	ID                 uint64    `json:"id"`
	Email              string    `json:"email"`
	PasswordHash       string    `json:"password_hash"`
	Role               string    `json:"role"`
	MustChangePassword bool      `json:"must_change_password"`
	LocationID         uint64    `json:"location_id,omitempty"`
	CreatedAt          time.Time `json:"created_at"`
	UpdatedAt          time.Time `json:"updated_at"`
	PasswordChangedAt  time.Time `json:"password_changed_at"`
	// SessionGen is bumped by every password change; access tokens carry
	// the value they were issued under, so older ones stop verifying even
	// within the same second (iat has one-second resolution).
	SessionGen uint64 `json:"session_gen,omitempty"`
}

// ErrDuplicate is returned when a unique field is already taken.
var ErrDuplicate = errors.New("already exists")

// ErrLastAdmin is returned when deleting or demoting the only admin.
var ErrLastAdmin = errors.New("the last admin account cannot be removed")

// NormalizeEmail is the form emails are stored and looked up in.
// NFC: "josé" typed composed and decomposed look the same and were two
// accounts (a black-box check).
func NormalizeEmail(e string) string { return norm.NFC.String(legacyEmail(e)) }

// legacyEmail is the form emails were stored in before NFC, still looked
// up, as typed and decomposed (an account stored decomposed must not be
// locked out; its next update stores it NFC).
func legacyEmail(e string) string { return strings.ToLower(strings.TrimSpace(e)) }

// CreateUser inserts u, assigning its id; the email must be unused.
func (db *DB) CreateUser(u *User) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		users, idx := tx.Bucket(bUsers), tx.Bucket(bUsersByEmail)
		u.Email = NormalizeEmail(u.Email)
		if emailID(idx, u.Email) != nil {
			return ErrDuplicate
		}
		if u.LocationID != 0 && !hasID(tx, bLocations, u.LocationID) {
			return invalidField("location_id", "location %d does not exist", u.LocationID)
		}
		id, err := users.NextSequence()
		if err != nil {
			return err
		}
		u.ID = id
		if err := idx.Put([]byte(u.Email), itob(id)); err != nil {
			return err
		}
		return putJSON(users, itob(id), u)
	})
}

// GetUser returns the user with id.
func (db *DB) GetUser(id uint64) (*User, error) {
	var u User
	err := db.bolt.View(func(tx *bolt.Tx) error { return getJSON(tx.Bucket(bUsers), itob(id), &u) })
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// emailID is the id idx holds for email in any form it was stored in.
// The form as typed comes first: of twins an older release let in (one
// account composed, one decomposed), each is reached by its own form (a
// review found the decomposed one locked out behind its twin).
func emailID(idx *bolt.Bucket, email string) []byte {
	var id []byte
	for _, form := range []string{legacyEmail(email), NormalizeEmail(email), norm.NFD.String(legacyEmail(email))} {
		if id == nil {
			id = idx.Get([]byte(form))
		}
	}
	return id
}

// GetUserByEmail looks a user up by (normalised) email.
func (db *DB) GetUserByEmail(email string) (*User, error) {
	var u User
	err := db.bolt.View(func(tx *bolt.Tx) error {
		id := emailID(tx.Bucket(bUsersByEmail), email)
		if id == nil {
			return ErrNotFound
		}
		return getJSON(tx.Bucket(bUsers), id, &u)
	})
	if err != nil {
		return nil, err
	}
	return &u, nil
}

// ListUsers returns every user ordered by id.
func (db *DB) ListUsers() ([]User, error) {
	var out []User
	err := db.bolt.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bUsers).ForEach(func(k, v []byte) error {
			var u User
			if err := getJSON(tx.Bucket(bUsers), k, &u); err != nil {
				return err
			}
			out = append(out, u)
			return nil
		})
	})
	return out, err
}

// CountUsers returns how many accounts exist.
func (db *DB) CountUsers() (int, error) {
	n := 0
	err := db.bolt.View(func(tx *bolt.Tx) error {
		n = tx.Bucket(bUsers).Stats().KeyN
		return nil
	})
	return n, err
}

// UpdateUser applies fn to the stored user inside one transaction. The
// email index follows an email change; demoting the last admin fails.
func (db *DB) UpdateUser(id uint64, fn func(u *User) error) (*User, error) {
	return db.updateUser(id, fn, false)
}

// UpdateUserEndingSessions is UpdateUser that also deletes every refresh
// token of the user in the same transaction (a password change or
// reset): in two, a crash or a refresh racing between them let a token
// of before the change get an access token of after it (a review).
func (db *DB) UpdateUserEndingSessions(id uint64, fn func(u *User) error) (*User, error) {
	return db.updateUser(id, fn, true)
}

func (db *DB) updateUser(id uint64, fn func(u *User) error, endSessions bool) (*User, error) {
	var out User
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		users, idx := tx.Bucket(bUsers), tx.Bucket(bUsersByEmail)
		var u User
		if err := getJSON(users, itob(id), &u); err != nil {
			return err
		}
		before := u
		if err := fn(&u); err != nil {
			return err
		}
		u.ID = id
		u.Email = NormalizeEmail(u.Email)
		if u.Email != before.Email && NormalizeEmail(before.Email) == u.Email {
			// The same address stored in a form before NFC: moved to
			// NFC, unless an account holds that form (twins an older
			// release let in: the update then keeps the old key, where a
			// duplicate error made every update a 500: a review).
			if other := idx.Get([]byte(u.Email)); other != nil && btoi(other) != id {
				u.Email = before.Email
			}
		}
		if u.Email != before.Email {
			if other := emailID(idx, u.Email); other != nil && btoi(other) != id {
				return ErrDuplicate
			}
			if err := idx.Delete([]byte(before.Email)); err != nil {
				return err
			}
			if err := idx.Put([]byte(u.Email), itob(id)); err != nil {
				return err
			}
		}
		if before.Role == "admin" && u.Role != "admin" && countAdmins(users) <= 1 {
			return ErrLastAdmin
		}
		if u.LocationID != before.LocationID && u.LocationID != 0 && !hasID(tx, bLocations, u.LocationID) {
			return invalidField("location_id", "location %d does not exist", u.LocationID)
		}
		if u.Role != before.Role {
			// An interface template is made for one role: one left
			// assigned across a role change would give the user another
			// role's pages.
			if a := tx.Bucket(bUITemplateUsers); a != nil {
				if err := a.Delete(itob(id)); err != nil {
					return err
				}
			}
		}
		if endSessions {
			if err := deleteRefreshWhere(tx, func(t *RefreshToken) bool { return t.UserID == id }); err != nil {
				return err
			}
		}
		out = u
		return putJSON(users, itob(id), &u)
	})
	if err != nil {
		return nil, err
	}
	return &out, nil
}

// DeleteUser removes a user and every refresh token it holds. The last
// admin cannot be deleted.
func (db *DB) DeleteUser(id uint64) error {
	return db.bolt.Update(func(tx *bolt.Tx) error {
		users := tx.Bucket(bUsers)
		var u User
		if err := getJSON(users, itob(id), &u); err != nil {
			return err
		}
		if u.Role == "admin" && countAdmins(users) <= 1 {
			return ErrLastAdmin
		}
		if err := tx.Bucket(bUsersByEmail).Delete([]byte(u.Email)); err != nil {
			return err
		}
		if err := deleteRefreshWhere(tx, func(t *RefreshToken) bool { return t.UserID == id }); err != nil {
			return err
		}
		return users.Delete(itob(id))
	})
}

func countAdmins(users *bolt.Bucket) int {
	n := 0
	_ = users.ForEach(func(k, v []byte) error {
		var u User
		if getJSON(users, k, &u) == nil && u.Role == "admin" {
			n++
		}
		return nil
	})
	return n
}
