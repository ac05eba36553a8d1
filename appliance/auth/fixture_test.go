package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

// RSA key generation is the slow part of auth.New; tests share two keys.
var (
	keysOnce sync.Once
	keyA     *rsa.PrivateKey
	keyB     *rsa.PrivateKey
)

func testKeys(t testing.TB) (*rsa.PrivateKey, *rsa.PrivateKey) {
	t.Helper()
	keysOnce.Do(func() {
		var err error
		if keyA, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			panic(err)
		}
		if keyB, err = rsa.GenerateKey(rand.Reader, 1024); err != nil {
			panic(err)
		}
	})
	return keyA, keyB
}

func pemOf(t testing.TB, k *rsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

type fixture struct {
	s    *Service
	db   *store.DB
	live *config.Live
	clk  *clock.Fake
}

const testPassword = "correct horse battery"

// newFixture builds a Service over a fresh store with the shared signing
// key preloaded, a fake clock and bcrypt cost 4.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	db, err := store.Open(filepath.Join(t.TempDir(), "service.db"), store.OpenOptions{LockTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	a, _ := testKeys(t)
	if err := db.PutKV(store.KeyJWTSigningKey, pemOf(t, a)); err != nil {
		t.Fatal(err)
	}
	c := config.Defaults(config.ActiveBrand())
	c.DefaultPassword = "initial-admin-pw"
	live := config.NewLive(c, nil, "")
	clk := clock.NewFake(t0)
	s, err := New(db, live, Options{Clock: clk, BcryptCost: 4, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{s: s, db: db, live: live, clk: clk}
}

func (f *fixture) user(t testing.TB, email, role string) *store.User {
	t.Helper()
	u, err := f.s.CreateUser(email, testPassword, role, false)
	if err != nil {
		t.Fatalf("CreateUser(%s): %v", email, err)
	}
	return u
}

func (f *fixture) login(t testing.TB, email, pw string) *LoginResult {
	t.Helper()
	res, err := f.s.Login(email, pw, "127.0.0.1")
	if err != nil {
		t.Fatalf("Login(%s): %v", email, err)
	}
	return res
}

func wantKind(t testing.TB, what string, err error, k apperr.Kind) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want kind %d", what, k)
		return
	}
	if got := apperr.KindOf(err); got != k {
		t.Errorf("%s: error %v has kind %d, want %d", what, err, got, k)
	}
}

func newLiveFrom(c *config.Config) *config.Live { return config.NewLive(c, nil, "") }
