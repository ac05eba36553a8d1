package store

import (
	"errors"
	bolt "go.etcd.io/bbolt"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func putTok(t *testing.T, db *DB, hash string, user uint64, family string, ttl time.Duration) {
	t.Helper()
	if err := db.PutRefreshToken([]byte(hash), RefreshToken{UserID: user, Family: family, CreatedAt: t0, ExpiresAt: t0.Add(ttl)}, t0); err != nil {
		t.Fatal(err)
	}
}

func TestRotateRefreshToken(t *testing.T) {
	db := openTemp(t)
	putTok(t, db, "a", 1, "fam", time.Hour)

	got, err := db.RotateRefreshToken([]byte("a"), []byte("b"), 2*time.Hour, t0.Add(time.Minute))
	if err != nil {
		t.Fatalf("rotate: %v", err)
	}
	if got.UserID != 1 || got.Family != "fam" || !got.ExpiresAt.Equal(t0.Add(time.Minute+2*time.Hour)) || got.Used {
		t.Errorf("rotated token = %+v", got)
	}
	// The new one rotates in turn.
	if _, err := db.RotateRefreshToken([]byte("b"), []byte("c"), time.Hour, t0.Add(2*time.Minute)); err != nil {
		t.Fatalf("rotating the new token: %v", err)
	}
	// Presenting an already rotated one is reuse: the family dies, the
	// newest token included.
	if _, err := db.RotateRefreshToken([]byte("a"), []byte("x"), time.Hour, t0.Add(3*time.Minute)); !errors.Is(err, ErrTokenReused) {
		t.Fatalf("reuse error = %v, want ErrTokenReused", err)
	}
	if _, err := db.RotateRefreshToken([]byte("c"), []byte("d"), time.Hour, t0.Add(4*time.Minute)); !errors.Is(err, ErrNotFound) {
		t.Errorf("newest token of a revoked family error = %v, want ErrNotFound", err)
	}
	// The replacement minted during the reuse attempt was not stored.
	if _, err := db.RotateRefreshToken([]byte("x"), []byte("y"), time.Hour, t0.Add(4*time.Minute)); !errors.Is(err, ErrNotFound) {
		t.Errorf("token minted on reuse exists: %v", err)
	}
	// The revocation is recorded for the family's access tokens, for the
	// ttl the reuse was told (an hour), then forgotten.
	revoked := func(at time.Time) bool {
		t.Helper()
		if err := db.PutRefreshToken([]byte("other"), RefreshToken{UserID: 2, Family: "other", ExpiresAt: at.Add(time.Hour)}, at); err != nil {
			t.Fatal(err)
		}
		r, err := db.RefreshFamilyRevoked("fam")
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if !revoked(t0.Add(time.Hour)) {
		t.Error("revoked family not recorded")
	}
	if other, _ := db.RefreshFamilyRevoked("other"); other {
		t.Error("a family never reused is revoked")
	}
	if revoked(t0.Add(3*time.Minute + time.Hour + time.Second)) {
		t.Error("revocation kept past its ttl")
	}
}

func TestReuseRevokesOnlyItsFamily(t *testing.T) {
	db := openTemp(t)
	putTok(t, db, "a1", 1, "famA", time.Hour)
	putTok(t, db, "b1", 1, "famB", time.Hour)
	if _, err := db.RotateRefreshToken([]byte("a1"), []byte("a2"), time.Hour, t0); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateRefreshToken([]byte("a1"), []byte("a3"), time.Hour, t0); !errors.Is(err, ErrTokenReused) {
		t.Fatalf("reuse error = %v", err)
	}
	if _, err := db.RotateRefreshToken([]byte("b1"), []byte("b2"), time.Hour, t0); err != nil {
		t.Errorf("other family of the same user was revoked: %v", err)
	}
}

func TestRefreshTokenExpiry(t *testing.T) {
	db := openTemp(t)
	putTok(t, db, "a", 1, "fam", time.Hour)
	if _, err := db.RotateRefreshToken([]byte("a"), []byte("b"), time.Hour, t0.Add(time.Hour+time.Second)); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired token error = %v, want ErrNotFound", err)
	}
	if _, err := db.RotateRefreshToken([]byte("unknown"), []byte("b"), time.Hour, t0); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown token error = %v, want ErrNotFound", err)
	}
}

func TestPutRefreshTokenPurgesExpired(t *testing.T) {
	db := openTemp(t)
	putTok(t, db, "old", 1, "f1", time.Minute)
	later := t0.Add(time.Hour)
	if err := db.PutRefreshToken([]byte("new"), RefreshToken{UserID: 1, Family: "f2", CreatedAt: later, ExpiresAt: later.Add(time.Hour)}, later); err != nil {
		t.Fatal(err)
	}
	var n int
	_ = db.View(func(tx *bolt.Tx) error { n = tx.Bucket(bRefresh).Stats().KeyN; return nil })
	if n != 1 {
		t.Errorf("refresh bucket holds %d tokens, want 1 (expired one purged)", n)
	}
}

// TestUpdateUserEndingSessions: a password change and the end of the
// user's refresh tokens are one transaction (they were two: a crash or a
// refresh between them let a token of before get an access token of
// after: a review); a refused change ends nothing, and another user's
// sessions go on.
func TestUpdateUserEndingSessions(t *testing.T) {
	db := openTemp(t)
	u := mkUser(t, db, "a@example.com", "user")
	putTok(t, db, "a1", u.ID, "f1", time.Hour)
	putTok(t, db, "other", u.ID+1, "f2", time.Hour)
	if _, err := db.UpdateUserEndingSessions(u.ID, func(*User) error { return errors.New("refused") }); err == nil {
		t.Fatal("the refusal was lost")
	}
	if _, err := db.RotateRefreshToken([]byte("a1"), []byte("a2"), time.Hour, t0); err != nil {
		t.Fatalf("a refused change ended the session: %v", err)
	}
	if _, err := db.UpdateUserEndingSessions(u.ID, func(u *User) error { u.SessionGen++; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateRefreshToken([]byte("a2"), []byte("a3"), time.Hour, t0); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a session outlived the change: %v", err)
	}
	if _, err := db.RotateRefreshToken([]byte("other"), []byte("other'"), time.Hour, t0); err != nil {
		t.Fatalf("another user's session ended: %v", err)
	}
}
