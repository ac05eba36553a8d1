package store

import (
	"errors"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func mkUser(t *testing.T, db *DB, email, role string) *User {
	t.Helper()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	u := &User{Email: email, PasswordHash: "hash-" + email, Role: role, CreatedAt: now, UpdatedAt: now, PasswordChangedAt: now}
	if err := db.CreateUser(u); err != nil {
		t.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

func TestCreateAndLookUpUsers(t *testing.T) {
	db := openTemp(t)
	a := mkUser(t, db, "  Admin@Example.COM ", "admin")
	if a.ID == 0 || a.Email != "admin@example.com" {
		t.Fatalf("created user = %+v; want an id and the normalised email", a)
	}
	b := mkUser(t, db, "user@example.com", "user")
	if b.ID <= a.ID {
		t.Errorf("ids not increasing: %d then %d", a.ID, b.ID)
	}
	if err := db.CreateUser(&User{Email: "ADMIN@example.com", Role: "user"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("duplicate email (other case) error = %v, want ErrDuplicate", err)
	}
	got, err := db.GetUserByEmail("admin@EXAMPLE.com")
	if err != nil || got.ID != a.ID {
		t.Errorf("GetUserByEmail = %+v, %v", got, err)
	}
	if _, err := db.GetUser(999); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUser(999) error = %v, want ErrNotFound", err)
	}
	if _, err := db.GetUserByEmail("nobody@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("GetUserByEmail(unknown) error = %v, want ErrNotFound", err)
	}
	n, err := db.CountUsers()
	if err != nil || n != 2 {
		t.Errorf("CountUsers = %d, %v; want 2", n, err)
	}
	list, err := db.ListUsers()
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Errorf("ListUsers = %+v, %v", list, err)
	}
}

func TestUpdateUserEmailIndexFollows(t *testing.T) {
	db := openTemp(t)
	mkUser(t, db, "admin@example.com", "admin")
	u := mkUser(t, db, "old@example.com", "user")
	taken := mkUser(t, db, "taken@example.com", "user")

	if _, err := db.UpdateUser(u.ID, func(x *User) error { x.Email = "New@Example.com"; return nil }); err != nil {
		t.Fatalf("UpdateUser: %v", err)
	}
	if _, err := db.GetUserByEmail("old@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("old email still resolves: %v", err)
	}
	if got, err := db.GetUserByEmail("new@example.com"); err != nil || got.ID != u.ID {
		t.Errorf("new email lookup = %+v, %v", got, err)
	}
	if _, err := db.UpdateUser(u.ID, func(x *User) error { x.Email = taken.Email; return nil }); !errors.Is(err, ErrDuplicate) {
		t.Errorf("email change onto a taken email error = %v, want ErrDuplicate", err)
	}
	// The failed change left both rows intact.
	if got, _ := db.GetUserByEmail("new@example.com"); got == nil || got.ID != u.ID {
		t.Error("failed update changed the index")
	}
	if _, err := db.UpdateUser(999, func(*User) error { return nil }); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateUser(999) error = %v, want ErrNotFound", err)
	}
	boom := errors.New("boom")
	if _, err := db.UpdateUser(u.ID, func(*User) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("UpdateUser callback error = %v, want boom", err)
	}
}

func TestLastAdminProtected(t *testing.T) {
	db := openTemp(t)
	a := mkUser(t, db, "a@example.com", "admin")
	u := mkUser(t, db, "u@example.com", "user")

	if err := db.DeleteUser(a.ID); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("deleting the only admin error = %v, want ErrLastAdmin", err)
	}
	if _, err := db.UpdateUser(a.ID, func(x *User) error { x.Role = "user"; return nil }); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("demoting the only admin error = %v, want ErrLastAdmin", err)
	}
	if got, _ := db.GetUser(a.ID); got.Role != "admin" {
		t.Fatalf("refused demotion was stored: role %s", got.Role)
	}

	b := mkUser(t, db, "b@example.com", "admin")
	if err := db.DeleteUser(a.ID); err != nil {
		t.Fatalf("deleting one of two admins: %v", err)
	}
	if _, err := db.GetUserByEmail("a@example.com"); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleted user's email still indexed: %v", err)
	}
	if err := db.DeleteUser(b.ID); !errors.Is(err, ErrLastAdmin) {
		t.Errorf("deleting the remaining admin error = %v, want ErrLastAdmin", err)
	}
	if err := db.DeleteUser(u.ID); err != nil {
		t.Errorf("deleting a plain user: %v", err)
	}
	if err := db.DeleteUser(u.ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting twice error = %v, want ErrNotFound", err)
	}
	// The email is free again.
	mkUser(t, db, "a@example.com", "user")
}

func TestDeleteUserRemovesRefreshTokens(t *testing.T) {
	db := openTemp(t)
	mkUser(t, db, "admin@example.com", "admin")
	u := mkUser(t, db, "u@example.com", "user")
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if err := db.PutRefreshToken([]byte("h1"), RefreshToken{UserID: u.ID, Family: "f", CreatedAt: now, ExpiresAt: now.Add(time.Hour)}, now); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteUser(u.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.RotateRefreshToken([]byte("h1"), []byte("h2"), time.Hour, now); !errors.Is(err, ErrNotFound) {
		t.Errorf("refresh token of a deleted user still rotates: %v", err)
	}
}

// TestARoleChangeUnassignsTheTemplate: a template is made for one role;
// left assigned across a role change it would give the user another
// role's pages.
func TestARoleChangeUnassignsTheTemplate(t *testing.T) {
	db := openTestDB(t)
	u := &User{Email: "a@example.com", PasswordHash: "x", Role: "user"}
	if err := db.CreateUser(u); err != nil {
		t.Fatal(err)
	}
	tpl, err := db.CreateUITemplate(UITemplate{Name: "ward", Role: "user", Definition: []byte(`{}`)})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.AssignUITemplate(u.ID, tpl.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateUser(u.ID, func(u *User) error { u.LocationID = 0; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserUITemplate(u.ID); err != nil {
		t.Fatalf("an edit keeping the role dropped the template: %v", err)
	}
	if _, err := db.UpdateUser(u.ID, func(u *User) error { u.Role = "maintenance"; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.UserUITemplate(u.ID); err != ErrNotFound {
		t.Fatalf("after the role change: %v", err)
	}
}

// An account stored decomposed before emails were NFC-normalised is still
// found, under either form, and an update moves its key to NFC.
func TestEmailStoredDecomposedIsStillFound(t *testing.T) {
	db := openTemp(t)
	u := mkUser(t, db, "plain@example.com", "user")
	nfd := "jose\u0301@example.com"
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bUsersByEmail)
		if err := idx.Delete([]byte(u.Email)); err != nil {
			return err
		}
		u.Email = nfd
		if err := putJSON(tx.Bucket(bUsers), itob(u.ID), u); err != nil {
			return err
		}
		return idx.Put([]byte(nfd), itob(u.ID))
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []string{nfd, "jos\u00e9@example.com"} {
		if got, err := db.GetUserByEmail(e); err != nil || got.ID != u.ID {
			t.Errorf("GetUserByEmail(%q) = %v, %v", e, got, err)
		}
	}
	if _, err := db.UpdateUser(u.ID, func(*User) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if got, err := db.GetUserByEmail("jos\u00e9@example.com"); err != nil || got.Email != "jos\u00e9@example.com" {
		t.Errorf("after an update: %+v %v", got, err)
	}
}

// Twins an older release let in, one account composed and one
// decomposed, are each reached by the form typed, and an update of the
// decomposed one keeps its key (it was a duplicate error, a 500 to every
// password reset: a review).
func TestEmailTwinsStoredBeforeNFCStayApart(t *testing.T) {
	db := openTemp(t)
	a := mkUser(t, db, "jos\u00e9@example.com", "user")
	b := mkUser(t, db, "plain@example.com", "user")
	nfd := "jose\u0301@example.com"
	err := db.bolt.Update(func(tx *bolt.Tx) error {
		idx := tx.Bucket(bUsersByEmail)
		if err := idx.Delete([]byte(b.Email)); err != nil {
			return err
		}
		b.Email = nfd
		if err := putJSON(tx.Bucket(bUsers), itob(b.ID), b); err != nil {
			return err
		}
		return idx.Put([]byte(nfd), itob(b.ID))
	})
	if err != nil {
		t.Fatal(err)
	}
	for form, want := range map[string]uint64{nfd: b.ID, "JOSE\u0301@example.com": b.ID, "jos\u00e9@example.com": a.ID} {
		if got, err := db.GetUserByEmail(form); err != nil || got.ID != want {
			t.Errorf("GetUserByEmail(%q) = %+v, %v; want id %d", form, got, err, want)
		}
	}
	if _, err := db.UpdateUser(b.ID, func(u *User) error { u.MustChangePassword = true; return nil }); err != nil {
		t.Fatalf("an update of the decomposed twin: %v", err)
	}
	if got, err := db.GetUserByEmail(nfd); err != nil || got.ID != b.ID || !got.MustChangePassword {
		t.Errorf("after the update: %+v %v", got, err)
	}
	if err := db.CreateUser(&User{Email: "JOSE\u0301@Example.com", Role: "user"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("a third form of the address: %v", err)
	}
}
