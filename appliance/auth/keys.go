package auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"

	"beaconhub/store"
)

// keySet is the active signing key and its published form.
type keySet struct {
	priv *rsa.PrivateKey
	kid  string
	jwks []byte
}

// loadOrCreateKey keeps one RSA key in the store so tokens stay valid across
// restarts; settings changes never touch it.
func loadOrCreateKey(db *store.DB) (*keySet, error) {
	raw, err := db.GetKV(store.KeyJWTSigningKey)
	if errors.Is(err, store.ErrNotFound) {
		k, gerr := rsa.GenerateKey(rand.Reader, 2048)
		if gerr != nil {
			return nil, gerr
		}
		der, merr := x509.MarshalPKCS8PrivateKey(k)
		if merr != nil {
			return nil, merr
		}
		// A racing first start keeps whichever key landed first.
		raw, err = db.PutKVIfAbsent(store.KeyJWTSigningKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}))
	}
	if err != nil {
		return nil, err
	}
	blk, _ := pem.Decode(raw)
	if blk == nil {
		return nil, fmt.Errorf("stored signing key is not PEM")
	}
	parsed, err := x509.ParsePKCS8PrivateKey(blk.Bytes)
	if err != nil {
		return nil, fmt.Errorf("stored signing key: %w", err)
	}
	priv, ok := parsed.(*rsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("stored signing key is not RSA")
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&priv.PublicKey)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(pubDER)
	kid := base64.RawURLEncoding.EncodeToString(sum[:12])
	jwks, err := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid,
		"n": base64.RawURLEncoding.EncodeToString(priv.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(priv.E)).Bytes()),
	}}})
	if err != nil {
		return nil, err
	}
	return &keySet{priv: priv, kid: kid, jwks: jwks}, nil
}

// JWKS returns the public key set document.
func (s *Service) JWKS() []byte { return s.keys.jwks }

// KeyID returns the kid of the signing key.
func (s *Service) KeyID() string { return s.keys.kid }
