package auth

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/apperr"
)

func TestLoginWrongPasswordAndUnknownEmailLookAlike(t *testing.T) {
	f := newFixture(t)
	f.user(t, "known@example.com", RoleUser)
	_, errPw := f.s.Login("known@example.com", "wrong password!", "127.0.0.1")
	_, errEmail := f.s.Login("unknown@example.com", testPassword, "127.0.0.2")
	wantKind(t, "wrong password", errPw, apperr.KindUnauthorized)
	wantKind(t, "unknown email", errEmail, apperr.KindUnauthorized)
	if errPw != nil && errEmail != nil && errPw.Error() != errEmail.Error() {
		t.Errorf("messages differ: %q vs %q", errPw, errEmail)
	}
	// Email lookup ignores case and surrounding space.
	if _, err := f.s.Login("  KNOWN@example.com ", testPassword, "127.0.0.3"); err != nil {
		t.Errorf("login with differently cased email: %v", err)
	}
}

func TestCreateUserValidation(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		email, pw, role, field string
	}{
		{"not-an-email", testPassword, RoleUser, "email"},
		{"Name <a@example.com>", testPassword, RoleUser, "email"},
		{"a@example.com", "short", RoleUser, "password"},
		{"a@example.com", strings.Repeat("p", 73), RoleUser, "password"},
		{"a@example.com", "        ", RoleUser, "password"},
		{"a@example.com", "pass\x00word", RoleUser, "password"},
		{"a@example.com", testPassword, "root", "role"},
		// Invisible characters made the default admin's address twice over
		// (a black-box check).
		{"admin@beaconhub.local\u00ad", testPassword, RoleUser, "email"},
		{"user@x.org\u200b", testPassword, RoleUser, "email"},
		{"us\u200er@x.org", testPassword, RoleUser, "email"},
		{"admin@beaconhub.local\u034f", testPassword, RoleUser, "email"},
		{"admin@beaconhub.local\ufe0f", testPassword, RoleUser, "email"},
		{"adm\u180bin@beaconhub.local", testPassword, RoleUser, "email"},
		{"admin@beaconhub.local\u3164", testPassword, RoleUser, "email"},
		{"admin\u115f@beaconhub.local", testPassword, RoleUser, "email"},
	} {
		_, err := f.s.CreateUser(tc.email, tc.pw, tc.role, false)
		e, ok := apperr.As(err)
		if !ok || e.Kind != apperr.KindInvalid || e.Field != tc.field {
			t.Errorf("CreateUser(%q, %d chars, %q) = %v, want invalid %s", tc.email, len(tc.pw), tc.role, err, tc.field)
		}
	}
	f.user(t, "dup@example.com", RoleUser)
	_, err := f.s.CreateUser("DUP@example.com", testPassword, RoleUser, false)
	wantKind(t, "duplicate email", err, apperr.KindConflict)
	// One address typed composed or decomposed is one account, and logs
	// in either way.
	f.user(t, "jos\u00e9@example.com", RoleUser)
	_, err = f.s.CreateUser("jose\u0301@example.com", testPassword, RoleUser, false)
	wantKind(t, "the same address decomposed", err, apperr.KindConflict)
	if _, err := f.s.Login("JOSE\u0301@example.com", testPassword, "127.0.0.9"); err != nil {
		t.Errorf("login decomposed: %v", err)
	}
}

func TestRefreshRotationAndReuse(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "u@example.com", RoleUser)
	first := f.login(t, "u@example.com", testPassword)

	f.clk.Advance(time.Minute)
	second, err := f.s.Refresh(first.RefreshToken)
	if err != nil {
		t.Fatalf("refresh: %v", err)
	}
	if second.RefreshToken == "" || second.RefreshToken == first.RefreshToken || second.Token == first.Token {
		t.Fatal("refresh did not rotate")
	}
	if c, err := f.s.Verify(second.Token); err != nil || c.UserID != u.ID {
		t.Fatalf("refreshed access token: %+v, %v", c, err)
	}
	third, err := f.s.Refresh(second.RefreshToken)
	if err != nil {
		t.Fatalf("the rotated-in token does not work: %v", err)
	}
	bystander := f.login(t, "u@example.com", testPassword) // another login, before the reuse
	// The rotated-out token is refused, and presenting it revokes the
	// whole family: the newest token dies too.
	_, err = f.s.Refresh(first.RefreshToken)
	wantKind(t, "reused refresh token", err, apperr.KindUnauthorized)
	_, err = f.s.Refresh(third.RefreshToken)
	wantKind(t, "newest token after reuse", err, apperr.KindUnauthorized)
	// So do the family's access tokens (they went on until they expired,
	// and with them the live feeds they opened); the other login's stay.
	for name, tok := range map[string]string{"login": first.Token, "refreshed": second.Token, "newest": third.Token} {
		_, err := f.s.Verify(tok)
		wantKind(t, name+" access token after reuse", err, apperr.KindForbidden)
	}
	if _, err := f.s.Verify(bystander.Token); err != nil {
		t.Errorf("another login's access token revoked: %v", err)
	}

	// Another session (another family) of the same user is unaffected.
	other := f.login(t, "u@example.com", testPassword)
	if _, err := f.s.Refresh(other.RefreshToken); err != nil {
		t.Errorf("independent session revoked: %v", err)
	}
	_, err = f.s.Refresh("")
	wantKind(t, "empty refresh token", err, apperr.KindInvalid)
	_, err = f.s.Refresh("made-up")
	wantKind(t, "unknown refresh token", err, apperr.KindUnauthorized)
}

func TestRefreshTokenLifetime(t *testing.T) {
	f := newFixture(t)
	f.user(t, "u@example.com", RoleUser)
	a := f.login(t, "u@example.com", testPassword)
	b := f.login(t, "u@example.com", testPassword)

	if RefreshTTL != 30*24*time.Hour {
		t.Errorf("RefreshTTL = %v, want 30 days", RefreshTTL)
	}
	f.clk.Advance(RefreshTTL - time.Minute)
	if _, err := f.s.Refresh(a.RefreshToken); err != nil {
		t.Errorf("refresh a minute before 30 days: %v", err)
	}
	f.clk.Advance(2 * time.Minute)
	_, err := f.s.Refresh(b.RefreshToken)
	wantKind(t, "refresh after 30 days", err, apperr.KindUnauthorized)
}

func TestRefreshTokensDieOnPasswordChangeAndDeletion(t *testing.T) {
	f := newFixture(t)
	f.user(t, "admin@example.com", RoleAdmin)
	u := f.user(t, "u@example.com", RoleUser)
	s1 := f.login(t, "u@example.com", testPassword)
	s2 := f.login(t, "u@example.com", testPassword)

	fresh, err := f.s.ChangePassword(u.ID, testPassword, "a brand new password")
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range []string{s1.RefreshToken, s2.RefreshToken} {
		_, err := f.s.Refresh(tok)
		wantKind(t, "refresh token issued before a password change #"+string(rune('1'+i)), err, apperr.KindUnauthorized)
	}
	if _, err := f.s.Refresh(fresh.RefreshToken); err != nil {
		t.Fatalf("refresh token from the change: %v", err)
	}

	s3 := f.login(t, "u@example.com", "a brand new password")
	if err := f.s.DeleteUser(u.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.s.Refresh(s3.RefreshToken)
	wantKind(t, "refresh token of a deleted user", err, apperr.KindUnauthorized)
	_, err = f.s.Verify(s3.Token)
	wantKind(t, "access token of a deleted user", err, apperr.KindForbidden)
}

func TestChangePassword(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "u@example.com", RoleUser)
	old := f.login(t, "u@example.com", testPassword)

	_, err := f.s.ChangePassword(u.ID, "not the password", "another good password")
	wantKind(t, "wrong current password", err, apperr.KindInvalid)
	_, err = f.s.ChangePassword(u.ID, testPassword, "short")
	wantKind(t, "too short new password", err, apperr.KindInvalid)
	if e, _ := apperr.As(err); e.Field != "new_password" {
		t.Errorf("too short new password names field %q, want new_password", e.Field)
	}
	_, err = f.s.ChangePassword(u.ID, testPassword, testPassword)
	wantKind(t, "unchanged password", err, apperr.KindInvalid)
	_, err = f.s.ChangePassword(9999, testPassword, "another good password")
	wantKind(t, "unknown user", err, apperr.KindNotFound)
	if _, err := f.s.Verify(old.Token); err != nil {
		t.Fatalf("refused changes invalidated the session: %v", err)
	}

	// No clock advance: tokens issued in the same second as the change
	// must stop working too.
	res, err := f.s.ChangePassword(u.ID, testPassword, "another good password")
	if err != nil {
		t.Fatalf("ChangePassword: %v", err)
	}
	if res.Token == "" || res.RefreshToken == "" || res.MustChangePassword {
		t.Errorf("ChangePassword result = %+v", res)
	}
	if _, err := f.s.Verify(res.Token); err != nil {
		t.Errorf("fresh token refused: %v", err)
	}
	_, err = f.s.Verify(old.Token)
	wantKind(t, "access token issued before the change", err, apperr.KindForbidden)

	_, err = f.s.Login("u@example.com", testPassword, "127.0.0.9")
	wantKind(t, "login with the old password", err, apperr.KindUnauthorized)
	again := f.login(t, "u@example.com", "another good password")
	if _, err := f.s.Verify(again.Token); err != nil {
		t.Errorf("token from a login right after the change refused: %v", err)
	}
	// Later tokens keep working after time moves on.
	f.clk.Advance(time.Hour)
	if _, err := f.s.Verify(again.Token); err != nil {
		t.Errorf("token refused an hour later: %v", err)
	}
}

// TestDefaultAdminEmailTakenStillStarts: an account holding the default
// admin's email (made before the first start) made every start fail once
// the admin was ensured while no admin exists; the start goes on, logged.
func TestDefaultAdminEmailTakenStillStarts(t *testing.T) {
	f := newFixture(t)
	if _, err := f.s.CreateUser(f.live.Get().DefaultEmail, "an-api-password-1", RoleAPI, false); err != nil {
		t.Fatal(err)
	}
	if created, err := f.s.EnsureDefaultAdmin(); err != nil || created {
		t.Fatalf("EnsureDefaultAdmin = %v, %v", created, err)
	}
}

func TestDefaultAdmin(t *testing.T) {
	f := newFixture(t)
	// An api account made before the first start (api-account create):
	// the box still gets its admin.
	if _, err := f.s.CreateUser("x1@api.local", "an-api-password-1", RoleAPI, false); err != nil {
		t.Fatal(err)
	}
	created, err := f.s.EnsureDefaultAdmin()
	if err != nil || !created {
		t.Fatalf("EnsureDefaultAdmin = %v, %v", created, err)
	}
	created, err = f.s.EnsureDefaultAdmin()
	if err != nil || created {
		t.Fatalf("second EnsureDefaultAdmin = %v, %v; want false", created, err)
	}
	c := f.live.Get()
	res := f.login(t, c.DefaultEmail, c.DefaultPassword)
	if !res.MustChangePassword || !res.User.MustChangePassword || res.User.Role != RoleAdmin || !res.User.Admin {
		t.Errorf("default admin login = %+v; want admin flagged must_change_password", res)
	}
	changed, err := f.s.ChangePassword(res.User.ID, c.DefaultPassword, "site specific password")
	if err != nil {
		t.Fatal(err)
	}
	if changed.MustChangePassword || changed.User.MustChangePassword {
		t.Error("must_change_password still set after the change")
	}
}

func TestLastAdminCannotBeDeleted(t *testing.T) {
	f := newFixture(t)
	a := f.user(t, "a@example.com", RoleAdmin)
	u := f.user(t, "u@example.com", RoleUser)
	wantKind(t, "deleting the last admin", f.s.DeleteUser(a.ID), apperr.KindConflict)
	wantKind(t, "deleting an unknown user", f.s.DeleteUser(9999), apperr.KindNotFound)
	if err := f.s.DeleteUser(u.ID); err != nil {
		t.Errorf("deleting a user: %v", err)
	}
	b := f.user(t, "b@example.com", RoleAdmin)
	if err := f.s.DeleteUser(a.ID); err != nil {
		t.Errorf("deleting one of two admins: %v", err)
	}
	wantKind(t, "deleting the new last admin", f.s.DeleteUser(b.ID), apperr.KindConflict)
	if _, err := f.db.GetUser(b.ID); err != nil {
		t.Errorf("last admin gone: %v", err)
	}
}

func TestLoginThrottlePerAccount(t *testing.T) {
	f := newFixture(t)
	f.user(t, "victim@example.com", RoleUser)
	lim := f.s.Limiter()
	// Each attempt from a new address, so only the account counts.
	ip := 0
	try := func(pw string) error {
		ip++
		_, err := f.s.Login("victim@example.com", pw, "10.0.0."+itoa(ip))
		return err
	}
	for i := 1; i < lim.SlowAfter; i++ {
		wantKind(t, "early failure", try("wrong password"), apperr.KindUnauthorized)
	}
	wantKind(t, "failure reaching SlowAfter", try("wrong password"), apperr.KindUnauthorized)
	// Slowed: even the right password waits.
	err := try(testPassword)
	e, ok := apperr.As(err)
	if !ok || e.Kind != apperr.KindTooMany || e.RetryAfter <= 0 || e.RetryAfter > time.Second {
		t.Fatalf("slowed attempt = %v, want 429 with a retry of at most 1s", err)
	}
	// Keep failing, waiting out each delay, until locked.
	for fails := lim.SlowAfter; fails < lim.LockAfter; fails++ {
		retry, _ := lim.Check("acct:victim@example.com")
		f.clk.Advance(retry)
		wantKind(t, "failure while slowed", try("wrong password"), apperr.KindUnauthorized)
	}
	err = try(testPassword)
	e, ok = apperr.As(err)
	if !ok || e.Kind != apperr.KindTooMany || e.RetryAfter < lim.Lockout-time.Second {
		t.Fatalf("locked attempt = %v (retry %v), want 429 with about %v", err, e.RetryAfter, lim.Lockout)
	}
	if !strings.Contains(e.Msg, "too many") {
		t.Errorf("lockout message %q", e.Msg)
	}
	f.clk.Advance(lim.Lockout - time.Second)
	wantKind(t, "still locked", try(testPassword), apperr.KindTooMany)
	f.clk.Advance(2 * time.Second)
	if err := try(testPassword); err != nil {
		t.Fatalf("login after the lockout: %v", err)
	}
	// Success reset the account: SlowAfter-1 new failures do not slow it.
	for i := 1; i < lim.SlowAfter; i++ {
		wantKind(t, "failure after reset", try("wrong password"), apperr.KindUnauthorized)
	}
	if err := try(testPassword); err != nil {
		t.Errorf("account not reset by a successful login: %v", err)
	}
}

func TestLoginThrottlePerAddress(t *testing.T) {
	f := newFixture(t)
	f.user(t, "good@example.com", RoleUser)
	lim := f.s.Limiter()
	for i := 0; i < lim.SlowAfter; i++ {
		_, err := f.s.Login("spray"+itoa(i)+"@example.com", "guess", "192.0.2.7")
		wantKind(t, "spray failure", err, apperr.KindUnauthorized)
	}
	_, err := f.s.Login("good@example.com", testPassword, "192.0.2.7")
	wantKind(t, "login from a spraying address", err, apperr.KindTooMany)
	if _, err := f.s.Login("good@example.com", testPassword, "192.0.2.8"); err != nil {
		t.Errorf("login from another address: %v", err)
	}
	// A success does not whitewash the address.
	_, err = f.s.Login("good@example.com", testPassword, "192.0.2.7")
	wantKind(t, "spraying address after another's success", err, apperr.KindTooMany)
}

func itoa(i int) string { return strconv.Itoa(i) }

// A wrong current password at change-password is a password guess and
// counts as a failed login of the account: a holder of a stolen token
// guessed without end (a black-box check).
func TestChangePasswordGuessesAreThrottled(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "u@example.com", RoleUser)
	lim := f.s.Limiter()
	// A missing current password is a 400 naming it, and no guess: a
	// black-box check saw it counted.
	for i := 0; i < lim.LockAfter+1; i++ {
		_, err := f.s.ChangePassword(u.ID, "", "another good password")
		if e, ok := apperr.As(err); !ok || e.Field != "current_password" || !strings.Contains(e.Msg, "required") {
			t.Fatalf("missing current password: %v", err)
		}
	}
	for i := 0; i < lim.SlowAfter; i++ {
		_, err := f.s.ChangePassword(u.ID, "not the password", "another good password")
		wantKind(t, "wrong current password", err, apperr.KindInvalid)
	}
	_, err := f.s.ChangePassword(u.ID, testPassword, "another good password")
	wantKind(t, "right current password while slowed", err, apperr.KindTooMany)
	retry, _ := lim.Check("chpw:" + itoa(int(u.ID)))
	f.clk.Advance(retry)
	if _, err := f.s.ChangePassword(u.ID, testPassword, "another good password"); err != nil {
		t.Fatalf("after the delay: %v", err)
	}
}

// Failed logins by anyone who knows the email do not stop the owner, in
// a session, from changing the password: the default admin, whose first
// token may only change it, could not while its login was sprayed (a
// review).
func TestLoginSprayDoesNotBlockChangePassword(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "u@example.com", RoleUser)
	lim := f.s.Limiter()
	for i := 0; i < lim.LockAfter; i++ {
		_, _ = f.s.Login("u@example.com", "wrong password", "10.0.1."+itoa(i))
	}
	if _, locked := lim.Check("acct:u@example.com"); !locked {
		t.Fatal("the account's login is not locked; the test proves nothing")
	}
	if _, err := f.s.ChangePassword(u.ID, testPassword, "another good password"); err != nil {
		t.Fatalf("change-password with the right current password during a login spray: %v", err)
	}
}
