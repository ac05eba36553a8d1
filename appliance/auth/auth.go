// Package auth owns identities: the RS256 signing key (kept in the store so
// tokens survive restarts) and its JWKS, access-token issue and
// verification, rotating refresh tokens with reuse detection, password
// hashing, the login throttle, and user accounts with their roles.
package auth

import (
	"crypto/sha256"
	"errors"
	"log/slog"
	"net/mail"
	"strconv"
	"strings"
	"time"
	"unicode"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"

	"golang.org/x/crypto/bcrypt"
)

// Roles.
const (
	RoleAdmin       = "admin"
	RoleUser        = "user"
	RoleMaintenance = "maintenance"
	RoleAPI         = "api"
)

// ValidRole reports whether r is a known role.
func ValidRole(r string) bool {
	switch r {
	case RoleAdmin, RoleUser, RoleMaintenance, RoleAPI:
		return true
	}
	return false
}

// RefreshTTL is the lifetime of a refresh token.
const RefreshTTL = 30 * 24 * time.Hour

// Options configure a Service.
type Options struct {
	Clock clock.Clock
	// BcryptCost defaults to bcrypt.DefaultCost; tests lower it.
	BcryptCost int
	Logger     *slog.Logger
	// PasswordChanged, when set, is called with the account's email
	// after a user changed its own password (the composition root
	// removes the first admin's password file then).
	PasswordChanged func(email string)
}

// Service is the auth subsystem.
type Service struct {
	db      *store.DB
	live    *config.Live
	clock   clock.Clock
	cost    int
	keys    *keySet
	limiter *Limiter
	log     *slog.Logger
	changed func(email string)
	// dummyHash makes a login for an unknown email cost as much as a wrong
	// password, so response time does not reveal which emails exist.
	dummyHash []byte
}

// New loads (or on first start generates) the signing key.
func New(db *store.DB, live *config.Live, opts Options) (*Service, error) {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.BcryptCost == 0 {
		opts.BcryptCost = bcrypt.DefaultCost
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	ks, err := loadOrCreateKey(db)
	if err != nil {
		return nil, err
	}
	dummy, err := bcrypt.GenerateFromPassword([]byte("not-a-password"), opts.BcryptCost)
	if err != nil {
		return nil, err
	}
	return &Service{
		db: db, live: live, clock: opts.Clock, cost: opts.BcryptCost, keys: ks,
		limiter: NewLimiter(opts.Clock), log: opts.Logger, dummyHash: dummy,
		changed: opts.PasswordChanged,
	}, nil
}

// Limiter exposes the login throttle (status and tests).
func (s *Service) Limiter() *Limiter { return s.limiter }

// HashPassword hashes a password with bcrypt.
func (s *Service) HashPassword(pw string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(pw), s.cost)
	return string(h), err
}

// ValidatePassword enforces the password policy on the body field named
// field (the error names it: change-password's is new_password, and a
// client highlighting "password" pointed at no field of its form).
func ValidatePassword(field, pw string) error {
	if len(pw) < 8 {
		// Bytes, as the upper bound: "at least 8 characters" refused
		// four of "éééa" and took four of "éééé" (a black-box check).
		return apperr.InvalidField(field, "%s must be at least 8 bytes (UTF-8: an accented letter counts 2)", field)
	}
	if strings.TrimSpace(pw) == "" || strings.ContainsRune(pw, 0) {
		return apperr.InvalidField(field, "%s may not be blank or hold a NUL character", field)
	}
	if len(pw) > 72 {
		// bcrypt ignores bytes past 72; refuse rather than silently truncate.
		return apperr.InvalidField(field, "%s must be at most 72 bytes", field)
	}
	return nil
}

// invisible reports characters that draw nothing: control and format
// characters, spaces, variation selectors and the other default-ignorable
// code points (a combining grapheme joiner, the Hangul fillers: a review
// found them beyond Cf).
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Variation_Selector, unicode.Other_Default_Ignorable_Code_Point) || unicode.IsSpace(r)
}

// ValidateEmail checks that e is a plain address.
func ValidateEmail(e string) error {
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != strings.TrimSpace(e) || len(e) > 254 {
		return apperr.InvalidField("email", "email must be a valid address")
	}
	// Invisible characters (zero-width space, soft hyphen, direction
	// marks) made "admin@beaconhub.local" twice over (a black-box check).
	if strings.IndexFunc(a.Address, invisible) >= 0 {
		return apperr.InvalidField("email", "email may not contain invisible or control characters")
	}
	return nil
}

// CreateUser validates and stores a new account.
func (s *Service) CreateUser(email, password, role string, mustChange bool) (*store.User, error) {
	return s.CreateScopedUser(email, password, role, 0, mustChange)
}

// CreateScopedUser is CreateUser for an account that sees only the assets
// under location (0: the whole site). Only the user and maintenance roles
// are scoped; admin and api accounts are system-wide, so a location for
// them is refused rather than silently ignored.
func (s *Service) CreateScopedUser(email, password, role string, location uint64, mustChange bool) (*store.User, error) {
	if err := scopeAllowed(role, location); err != nil {
		return nil, err
	}
	if err := ValidateEmail(email); err != nil {
		return nil, err
	}
	if err := ValidatePassword("password", password); err != nil {
		return nil, err
	}
	if !ValidRole(role) {
		return nil, apperr.InvalidField("role", "role must be one of admin, user, maintenance, api")
	}
	h, err := s.HashPassword(password)
	if err != nil {
		return nil, err
	}
	now := s.clock.Now().UTC()
	u := &store.User{Email: email, PasswordHash: h, Role: role, MustChangePassword: mustChange,
		LocationID: location, CreatedAt: now, UpdatedAt: now, PasswordChangedAt: now}
	if err := s.db.CreateUser(u); err != nil {
		if errors.Is(err, store.ErrDuplicate) {
			return nil, apperr.Conflict("a user with this email already exists")
		}
		return nil, store.ClientErr(err, "user")
	}
	return u, nil
}

// scoped reports whether accounts of role may be bound to a location:
// admin and api accounts see the whole site.
func scoped(role string) bool { return role != RoleAdmin && role != RoleAPI }

// scopeAllowed refuses a location for a role that sees the whole site.
func scopeAllowed(role string, location uint64) error {
	if location != 0 && !scoped(role) {
		return apperr.InvalidField("location_id", "%s accounts see the whole site; location_id is for the user and maintenance roles", role)
	}
	return nil
}

// UserChange is an admin's edit of another account: each field set
// changes (PATCH /api/v1/users/:userId).
type UserChange struct {
	Role       *string
	LocationID *uint64
	// Password, set, replaces the password; the user must change it at
	// their next login, and every session of theirs ends (a forgotten
	// password; before, the account had to be deleted and made again,
	// losing its id and template).
	Password *string
}

// UpdateUser applies c to account id. The role and scope are read from
// the database at every request, so a change applies at the next one.
// A role with no scope (admin, api) drops the location; the last admin
// cannot be demoted (409).
func (s *Service) UpdateUser(id uint64, c UserChange) (*store.User, error) {
	if c.Role != nil && !ValidRole(*c.Role) {
		return nil, apperr.InvalidField("role", "role must be one of admin, user, maintenance, api")
	}
	var hash string
	if c.Password != nil {
		if err := ValidatePassword("password", *c.Password); err != nil {
			return nil, err
		}
		h, err := s.HashPassword(*c.Password)
		if err != nil {
			return nil, err
		}
		hash = h
	}
	now := s.clock.Now().UTC().Truncate(time.Second)
	update := s.db.UpdateUser
	if hash != "" {
		update = s.db.UpdateUserEndingSessions
	}
	u, err := update(id, func(u *store.User) error {
		if c.Role != nil {
			u.Role = *c.Role
		}
		if c.LocationID != nil {
			u.LocationID = *c.LocationID
		}
		if !scoped(u.Role) {
			if c.LocationID != nil {
				if err := scopeAllowed(u.Role, *c.LocationID); err != nil {
					return err
				}
			}
			u.LocationID = 0
		}
		if hash != "" {
			u.PasswordHash, u.MustChangePassword, u.PasswordChangedAt = hash, true, now
			u.SessionGen++
		}
		if u.Role == RoleAPI && u.MustChangePassword && hash == "" {
			// The flag would be cleared on a password nobody chose: the
			// untouched default admin made api would keep the install
			// file's password for good (a review).
			return apperr.InvalidField("password", "this account must still change its password: give it one in the same request to make it an api account")
		}
		if u.Role == RoleAPI {
			// An api account cannot change its own password
			// (change-password is not an integration route), so one
			// told to was left unusable: every route answered "change
			// your password" and change-password answered 403 (a
			// black-box check). Its password is the admin's to set.
			u.MustChangePassword = false
		}
		u.UpdatedAt = now
		return nil
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, apperr.NotFound("user not found")
	case errors.Is(err, store.ErrLastAdmin):
		return nil, apperr.Conflict("the last admin account cannot be demoted")
	case err != nil:
		return nil, store.ClientErr(err, "user")
	}
	return u, nil
}

// EnsureDefaultAdmin creates the default admin from the configuration when
// the database has no admin yet (first install). The account must change
// its password at first login. "No admin", not "no user": an api account
// created with `beaconhub api-account create` before the first start
// left a box nobody could administer (a black-box check). Once there is
// an admin there always is one (the last cannot be deleted or demoted).
func (s *Service) EnsureDefaultAdmin() (bool, error) {
	users, err := s.db.ListUsers()
	if err != nil {
		return false, err
	}
	for _, u := range users {
		if u.Role == RoleAdmin {
			return false, nil
		}
	}
	c := s.live.Get()
	if _, err := s.CreateUser(c.DefaultEmail, c.DefaultPassword, RoleAdmin, true); err != nil {
		if apperr.KindOf(err) == apperr.KindConflict {
			// Its email is another account's (an api account named so
			// before the first start): starting without an admin beats
			// not starting at all (a review: every start failed).
			s.log.Error("no admin account, and the default admin's email is taken by another account: delete that account's database record or set server_credentials_default_email to a free address and restart", "email", c.DefaultEmail)
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// DeleteUser removes an account (never the last admin).
func (s *Service) DeleteUser(id uint64) error {
	err := s.db.DeleteUser(id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apperr.NotFound("user not found")
	case errors.Is(err, store.ErrLastAdmin):
		return apperr.Conflict("the last admin account cannot be deleted")
	}
	return err
}

// ChangePassword needs the current password. Every refresh token and
// every access token issued before the change stop working, so other
// sessions must log in again; the caller gets a fresh pair.
func (s *Service) ChangePassword(userID uint64, current, next string) (*LoginResult, error) {
	if current == "" {
		// A missing field, not a wrong guess: it was counted as one (a
		// black-box check), as login's missing fields are not.
		return nil, apperr.InvalidField("current_password", "current_password is required")
	}
	u, err := s.db.GetUser(userID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound("user not found")
	}
	if err != nil {
		return nil, err
	}
	// A wrong current password is a password guess: throttled as failed
	// logins are (a holder of a stolen token could guess without end, and
	// then take the account for good), under a key of its own: failed
	// logins by anyone knowing the email must not stop the owner's change
	// (a review: the default admin could not replace its password while
	// someone sprayed its login).
	acct := "chpw:" + strconv.FormatUint(u.ID, 10)
	if retry, locked := s.limiter.Check(acct); locked {
		return nil, apperr.TooMany(retry, "too many wrong passwords; try again later")
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(current)) != nil {
		s.limiter.Fail(acct)
		s.log.Info("wrong current password at change-password", "email", store.NormalizeEmail(u.Email))
		return nil, apperr.InvalidField("current_password", "current password is wrong")
	}
	s.limiter.Success(acct)
	if err := ValidatePassword("new_password", next); err != nil {
		return nil, err
	}
	if current == next {
		return nil, apperr.InvalidField("new_password", "new password must differ from the current one")
	}
	h, err := s.HashPassword(next)
	if err != nil {
		return nil, err
	}
	// Second resolution, like the iat claim it is compared with.
	now := s.clock.Now().UTC().Truncate(time.Second)
	u, err = s.db.UpdateUserEndingSessions(userID, func(u *store.User) error {
		u.PasswordHash = h
		u.MustChangePassword = false
		u.PasswordChangedAt = now
		u.UpdatedAt = now
		u.SessionGen++
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.changed != nil {
		s.changed(u.Email)
	}
	return s.issue(u, "")
}

func hashToken(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}
