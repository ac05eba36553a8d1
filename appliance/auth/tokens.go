package auth

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/crypto/bcrypt"
)

// Claims are the access token's claims.
type Claims struct {
	UserID uint64 `json:"uid"`
	Email  string `json:"email"`
	Role   string `json:"role"`
	Admin  bool   `json:"admin"`
	// MustChangePassword is read from the store at verification, never
	// from the token.
	MustChangePassword bool `json:"-"`
	// Gen is the user's SessionGen at issue time.
	Gen uint64 `json:"gen,omitempty"`
	// Family is the login (refresh-token family) the token was issued
	// for: a reuse of one of its refresh tokens revokes the family's
	// access tokens too, and the live feeds they opened.
	Family string `json:"fam,omitempty"`
	jwt.RegisteredClaims
}

// LoginResult is what login and refresh return to the client.
type LoginResult struct {
	Token              string     `json:"token"`
	RefreshToken       string     `json:"refresh_token"`
	ExpiresAt          int64      `json:"expires_at"`
	User               PublicUser `json:"user"`
	MustChangePassword bool       `json:"must_change_password"`
}

// PublicUser is a user as shown to clients (no hash).
type PublicUser struct {
	ID                 uint64 `json:"id"`
	Email              string `json:"email"`
	Role               string `json:"role"`
	Admin              bool   `json:"admin"`
	MustChangePassword bool   `json:"must_change_password"`
	LocationID         uint64 `json:"location_id,omitempty"`
	CreatedAt          int64  `json:"created_at"`
}

// Public converts a stored user.
func Public(u *store.User) PublicUser {
	return PublicUser{ID: u.ID, Email: u.Email, Role: u.Role, Admin: u.Role == RoleAdmin,
		MustChangePassword: u.MustChangePassword, LocationID: u.LocationID, CreatedAt: u.CreatedAt.UnixMilli()}
}

var errBadLogin = apperr.Unauthorized("wrong email or password")

// Login checks credentials under the throttle and issues tokens.
func (s *Service) Login(email, password, remoteIP string) (*LoginResult, error) {
	acct, ip := "acct:"+store.NormalizeEmail(email), "ip:"+remoteIP
	if retry, locked := s.limiter.Check(acct, ip); locked {
		s.log.Warn("login refused by the failed-login throttle", "email", store.NormalizeEmail(email), "remote", remoteIP, "retry_after_s", int(retry.Seconds()))
		return nil, apperr.TooMany(retry, "too many failed logins; try again later")
	}
	u, err := s.db.GetUserByEmail(email)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, err
	}
	hash := s.dummyHash
	if u != nil {
		hash = []byte(u.PasswordHash)
	}
	if bcrypt.CompareHashAndPassword(hash, []byte(password)) != nil || u == nil {
		s.limiter.Fail(acct, ip)
		s.log.Info("failed login", "email", store.NormalizeEmail(email), "remote", remoteIP)
		return nil, errBadLogin
	}
	s.limiter.Success(acct)
	return s.issue(u, "")
}

// Refresh rotates a refresh token: the presented one stops working, and
// presenting it again revokes the whole family.
func (s *Service) Refresh(refresh string) (*LoginResult, error) {
	if refresh == "" {
		return nil, apperr.InvalidField("refresh_token", "refresh_token is required")
	}
	next := newOpaqueToken()
	now := s.clock.Now()
	t, err := s.db.RotateRefreshToken(hashToken(refresh), hashToken(next), RefreshTTL, now)
	switch {
	case errors.Is(err, store.ErrTokenReused):
		s.log.Warn("refresh token reuse detected; session family revoked")
		return nil, apperr.Unauthorized("refresh token is no longer valid")
	case errors.Is(err, store.ErrNotFound):
		return nil, apperr.Unauthorized("refresh token is no longer valid")
	case err != nil:
		return nil, err
	}
	u, err := s.db.GetUser(t.UserID)
	if err != nil {
		return nil, apperr.Unauthorized("refresh token is no longer valid")
	}
	res, err := s.accessToken(u, t.Family)
	if err != nil {
		return nil, err
	}
	res.RefreshToken = next
	return res, nil
}

// issue makes an access token and a new refresh-token family.
func (s *Service) issue(u *store.User, family string) (*LoginResult, error) {
	if family == "" {
		family = newOpaqueToken()
	}
	res, err := s.accessToken(u, family)
	if err != nil {
		return nil, err
	}
	refresh := newOpaqueToken()
	now := s.clock.Now()
	if err := s.db.PutRefreshToken(hashToken(refresh), store.RefreshToken{
		UserID: u.ID, Family: family, CreatedAt: now, ExpiresAt: now.Add(RefreshTTL),
	}, now); err != nil {
		return nil, err
	}
	res.RefreshToken = refresh
	return res, nil
}

func (s *Service) accessToken(u *store.User, family string) (*LoginResult, error) {
	c := s.live.Get()
	now := s.clock.Now()
	exp := now.Add(c.JWTExpiryDuration())
	claims := Claims{
		UserID: u.ID, Email: u.Email, Role: u.Role, Admin: u.Role == RoleAdmin, Gen: u.SessionGen, Family: family,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject:   strconv.FormatUint(u.ID, 10),
			Issuer:    c.JWTIssuer,
			Audience:  jwt.ClaimStrings{c.JWTAudience},
			IssuedAt:  jwt.NewNumericDate(now),
			NotBefore: jwt.NewNumericDate(now.Add(-time.Minute)),
			ExpiresAt: jwt.NewNumericDate(exp),
			ID:        newOpaqueToken()[:16],
		},
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, claims)
	tok.Header["kid"] = s.keys.kid
	signed, err := tok.SignedString(s.keys.priv)
	if err != nil {
		return nil, err
	}
	return &LoginResult{Token: signed, ExpiresAt: exp.UnixMilli(), User: Public(u), MustChangePassword: u.MustChangePassword}, nil
}

// Verify parses an access token: RS256 only, with exp, iss and aud
// required and matching the configuration. The user must still exist, and
// tokens issued before the user's last password change are refused.
func (s *Service) Verify(raw string) (*Claims, error) {
	c := s.live.Get()
	var claims Claims
	_, err := jwt.ParseWithClaims(raw, &claims, func(t *jwt.Token) (any, error) {
		if kid, ok := t.Header["kid"].(string); ok && kid != s.keys.kid {
			return nil, errors.New("unknown key id")
		}
		return &s.keys.priv.PublicKey, nil
	},
		jwt.WithValidMethods([]string{"RS256"}),
		jwt.WithExpirationRequired(),
		jwt.WithIssuer(c.JWTIssuer),
		jwt.WithAudience(c.JWTAudience),
		jwt.WithTimeFunc(s.clock.Now),
	)
	if err != nil {
		return nil, apperr.Forbidden("invalid or expired token")
	}
	u, err := s.db.GetUser(claims.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.Forbidden("invalid or expired token")
	}
	if err != nil {
		// The store failed, not the token: a caller that turned this into
		// "sign in again" would log every client out on one disk error.
		return nil, fmt.Errorf("auth: reading user %d: %w", claims.UserID, err)
	}
	if claims.Gen != u.SessionGen ||
		(claims.IssuedAt != nil && claims.IssuedAt.Time.Before(u.PasswordChangedAt.Truncate(time.Second))) {
		return nil, apperr.Forbidden("invalid or expired token")
	}
	// A reused refresh token revoked its login: only the refresh tokens
	// died, and the access tokens of that login, and the live feeds
	// they opened, went on until they expired (a review).
	if claims.Family != "" {
		revoked, err := s.db.RefreshFamilyRevoked(claims.Family)
		if err != nil {
			return nil, fmt.Errorf("auth: reading revoked logins: %w", err)
		}
		if revoked {
			return nil, apperr.Forbidden("invalid or expired token")
		}
	}
	// Role comes from the store, not the token, so a demotion applies at once.
	claims.Role = u.Role
	claims.Admin = u.Role == RoleAdmin
	claims.Email = u.Email
	claims.MustChangePassword = u.MustChangePassword
	return &claims, nil
}

func newOpaqueToken() string {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:])
}
