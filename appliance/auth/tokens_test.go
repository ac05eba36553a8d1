package auth

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"math/big"
	"strconv"
	"testing"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/golang-jwt/jwt/v5"
)

// publicKeyFromJWKS parses the published document the way an outside
// verifier would.
func publicKeyFromJWKS(t *testing.T, doc []byte) (*rsa.PublicKey, string) {
	t.Helper()
	var set struct {
		Keys []struct {
			Kty, Use, Alg, Kid, N, E string
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatalf("JWKS is not JSON: %v", err)
	}
	if len(set.Keys) != 1 {
		t.Fatalf("JWKS has %d keys, want 1", len(set.Keys))
	}
	k := set.Keys[0]
	if k.Kty != "RSA" || k.Alg != "RS256" || k.Use != "sig" || k.Kid == "" {
		t.Errorf("JWKS key metadata = %+v", k)
	}
	n, err := base64.RawURLEncoding.DecodeString(k.N)
	if err != nil {
		t.Fatalf("n: %v", err)
	}
	e, err := base64.RawURLEncoding.DecodeString(k.E)
	if err != nil {
		t.Fatalf("e: %v", err)
	}
	return &rsa.PublicKey{N: new(big.Int).SetBytes(n), E: int(new(big.Int).SetBytes(e).Int64())}, k.Kid
}

func TestTokenVerifiesAgainstPublishedJWKS(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "ops@example.com", RoleMaintenance)
	res := f.login(t, "OPS@example.com", testPassword)
	pub, kid := publicKeyFromJWKS(t, f.s.JWKS())
	if kid != f.s.KeyID() {
		t.Errorf("JWKS kid %s != KeyID %s", kid, f.s.KeyID())
	}
	var claims Claims
	tok, err := jwt.ParseWithClaims(res.Token, &claims, func(tk *jwt.Token) (any, error) {
		if tk.Header["kid"] != kid {
			t.Errorf("token kid %v, want %s", tk.Header["kid"], kid)
		}
		return pub, nil
	}, jwt.WithValidMethods([]string{"RS256"}), jwt.WithTimeFunc(f.clk.Now), jwt.WithExpirationRequired())
	if err != nil || !tok.Valid {
		t.Fatalf("token does not verify against the JWKS key: %v", err)
	}
	c := f.live.Get()
	if claims.Issuer != c.JWTIssuer || len(claims.Audience) != 1 || claims.Audience[0] != c.JWTAudience {
		t.Errorf("iss/aud = %s %v", claims.Issuer, claims.Audience)
	}
	if claims.UserID != u.ID || claims.Subject != strconv.FormatUint(u.ID, 10) || claims.Role != RoleMaintenance || claims.Admin {
		t.Errorf("claims = %+v", claims)
	}
	if !claims.ExpiresAt.Time.Equal(t0.Add(8 * time.Hour)) {
		t.Errorf("exp = %v, want now+8h", claims.ExpiresAt.Time)
	}
	if res.ExpiresAt != t0.Add(8*time.Hour).UnixMilli() {
		t.Errorf("LoginResult.ExpiresAt = %d", res.ExpiresAt)
	}
	if res.User.Email != "ops@example.com" || res.User.ID != u.ID || res.RefreshToken == "" {
		t.Errorf("LoginResult = %+v", res)
	}
	got, err := f.s.Verify(res.Token)
	if err != nil || got.UserID != u.ID {
		t.Errorf("Verify = %+v, %v", got, err)
	}
}

func TestSigningKeyPersistsAcrossRestart(t *testing.T) {
	f := newFixture(t)
	// A store without a key gets one generated and stored.
	db2 := f.db
	f.user(t, "a@example.com", RoleAdmin)
	res := f.login(t, "a@example.com", testPassword)
	again, err := New(db2, f.live, Options{Clock: f.clk, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	if again.KeyID() != f.s.KeyID() || string(again.JWKS()) != string(f.s.JWKS()) {
		t.Error("a second Service over the same store has another key")
	}
	if _, err := again.Verify(res.Token); err != nil {
		t.Errorf("token from before the restart refused: %v", err)
	}
}

func TestKeyGeneratedOnFirstStart(t *testing.T) {
	f := newFixture(t)
	// Wipe the preloaded key by using a fresh store.
	db, err := store.Open(t.TempDir()+"/fresh.db", store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s, err := New(db, f.live, Options{Clock: f.clk, BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := db.GetKV(store.KeyJWTSigningKey)
	if err != nil || len(raw) == 0 {
		t.Fatalf("no key stored: %v", err)
	}
	if s.KeyID() == f.s.KeyID() {
		t.Error("fresh store reused the shared test key")
	}
	pub, _ := publicKeyFromJWKS(t, s.JWKS())
	if pub.N.BitLen() < 2048 {
		t.Errorf("generated key has %d bits", pub.N.BitLen())
	}
}

// forged returns claims that would be valid for u right now.
func (f *fixture) validClaims(u *store.User) Claims {
	c := f.live.Get()
	now := f.clk.Now()
	return Claims{UserID: u.ID, Email: u.Email, Role: u.Role, Admin: u.Role == RoleAdmin,
		RegisteredClaims: jwt.RegisteredClaims{
			Subject: strconv.FormatUint(u.ID, 10), Issuer: c.JWTIssuer, Audience: jwt.ClaimStrings{c.JWTAudience},
			IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)),
		}}
}

func sign(t *testing.T, m jwt.SigningMethod, c Claims, key any, kid string) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("sign %s: %v", m.Alg(), err)
	}
	return s
}

func TestVerifyRefusesForgedAndInvalidTokens(t *testing.T) {
	f := newFixture(t)
	admin := f.user(t, "admin@example.com", RoleAdmin)
	own, other := testKeys(t)
	kid := f.s.KeyID()

	// Control: a correctly made token passes, so the refusals below are
	// about the one thing each case changes.
	if _, err := f.s.Verify(sign(t, jwt.SigningMethodRS256, f.validClaims(admin), own, kid)); err != nil {
		t.Fatalf("control token refused: %v", err)
	}

	pubDER, _ := x509.MarshalPKIXPublicKey(&own.PublicKey)
	pubPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER})
	pkcs1PEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PUBLIC KEY", Bytes: x509.MarshalPKCS1PublicKey(&own.PublicKey)})

	mut := func(fn func(*Claims)) Claims { c := f.validClaims(admin); fn(&c); return c }
	noneTok := func(c Claims) string {
		s, err := jwt.NewWithClaims(jwt.SigningMethodNone, c).SignedString(jwt.UnsafeAllowNoneSignatureType)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := map[string]string{
		"another RSA key":         sign(t, jwt.SigningMethodRS256, f.validClaims(admin), other, kid),
		"another RSA key, no kid": sign(t, jwt.SigningMethodRS256, f.validClaims(admin), other, ""),
		"alg none":                noneTok(f.validClaims(admin)),
		"HS256 with public PEM":   sign(t, jwt.SigningMethodHS256, f.validClaims(admin), pubPEM, kid),
		"HS256 with public DER":   sign(t, jwt.SigningMethodHS256, f.validClaims(admin), pubDER, kid),
		"HS256 with PKCS1 PEM":    sign(t, jwt.SigningMethodHS256, f.validClaims(admin), pkcs1PEM, kid),
		"HS256 with JWKS doc":     sign(t, jwt.SigningMethodHS256, f.validClaims(admin), f.s.JWKS(), kid),
		"RS512 with own key":      sign(t, jwt.SigningMethodRS512, f.validClaims(admin), own, kid),
		"PS256 with own key":      sign(t, jwt.SigningMethodPS256, f.validClaims(admin), own, kid),
		"missing exp":             sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.ExpiresAt = nil }), own, kid),
		"expired":                 sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.ExpiresAt = jwt.NewNumericDate(t0.Add(-time.Second)) }), own, kid),
		"wrong iss":               sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.Issuer = "https://evil.example" }), own, kid),
		"missing iss":             sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.Issuer = "" }), own, kid),
		"wrong aud":               sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.Audience = jwt.ClaimStrings{"https://other.example"} }), own, kid),
		"missing aud":             sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.Audience = nil }), own, kid),
		"not yet valid":           sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.NotBefore = jwt.NewNumericDate(t0.Add(time.Hour)) }), own, kid),
		"unknown kid":             sign(t, jwt.SigningMethodRS256, f.validClaims(admin), own, "some-other-kid"),
		"unknown user":            sign(t, jwt.SigningMethodRS256, mut(func(c *Claims) { c.UserID = 9999 }), own, kid),
		"garbage":                 "not.a.jwt",
		"empty":                   "",
	}
	for name, tok := range cases {
		_, err := f.s.Verify(tok)
		if err == nil {
			t.Errorf("%s: token accepted", name)
			continue
		}
		if apperr.KindOf(err) != apperr.KindForbidden {
			t.Errorf("%s: error kind %d (%v), want forbidden", name, apperr.KindOf(err), err)
		}
	}
}

func TestAccessTokenExpiry(t *testing.T) {
	f := newFixture(t)
	f.user(t, "u@example.com", RoleUser)
	res := f.login(t, "u@example.com", testPassword)
	f.clk.Advance(8*time.Hour - time.Second)
	if _, err := f.s.Verify(res.Token); err != nil {
		t.Fatalf("token refused a second before expiry: %v", err)
	}
	f.clk.Advance(2 * time.Second)
	_, err := f.s.Verify(res.Token)
	wantKind(t, "expired token", err, apperr.KindForbidden)
}

func TestExpiryFollowsConfig(t *testing.T) {
	f := newFixture(t)
	f.user(t, "u@example.com", RoleUser)
	c := f.live.Get().Clone()
	c.JWTExpiry = "15m"
	f.s.live = newLiveFrom(c)
	res := f.login(t, "u@example.com", testPassword)
	if res.ExpiresAt != t0.Add(15*time.Minute).UnixMilli() {
		t.Errorf("expires_at = %d, want now+15m", res.ExpiresAt)
	}
	f.clk.Advance(15*time.Minute + time.Second)
	_, err := f.s.Verify(res.Token)
	wantKind(t, "token past a 15m expiry", err, apperr.KindForbidden)
}

func TestRoleComesFromStore(t *testing.T) {
	f := newFixture(t)
	f.user(t, "root@example.com", RoleAdmin)
	a := f.user(t, "second@example.com", RoleAdmin)
	res := f.login(t, "second@example.com", testPassword)
	if _, err := f.db.UpdateUser(a.ID, func(u *store.User) error { u.Role = RoleUser; return nil }); err != nil {
		t.Fatal(err)
	}
	c, err := f.s.Verify(res.Token)
	if err != nil {
		t.Fatal(err)
	}
	if c.Role != RoleUser || c.Admin {
		t.Errorf("demoted user still verifies as %s admin=%v", c.Role, c.Admin)
	}
}
