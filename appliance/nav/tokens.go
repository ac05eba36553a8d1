package nav

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// tokenPrefix marks navigation tokens so a leaked one is recognisable.
const tokenPrefix = "bhnav_"

func hashToken(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateToken mints a token; the secret is returned once and only its
// SHA-256 is stored (a high-entropy secret needs no slow hash).
//
// The name is checked as other display names are (1-100 characters, no
// control characters): nameless tokens could not be told apart in the
// list, to revoke the right one (a black-box check).
func (s *Service) CreateToken(name, by string) (string, store.NavToken, error) {
	name, err := apperr.CleanName("name", name, 100)
	if err != nil {
		return "", store.NavToken{}, err
	}
	var raw [32]byte
	_, _ = rand.Read(raw[:])
	secret := tokenPrefix + base64.RawURLEncoding.EncodeToString(raw[:])
	t, err := s.db.CreateNavToken(store.NavToken{
		Name: name, Hash: hashToken(secret), Prefix: secret[:len(tokenPrefix)+4],
		CreatedBy: by, CreatedAt: s.clock.Now().UTC(),
	})
	return secret, t, err
}

// Tokens lists the tokens (without secrets).
func (s *Service) Tokens() ([]store.NavToken, error) { return s.db.ListNavTokens() }

// RevokeToken deletes a token; the next request with it is refused.
func (s *Service) RevokeToken(id uint64) error {
	return store.ClientErr(s.db.DeleteNavToken(id), "navigation token")
}

// VerifyToken reports whether secret is a current token. It reads the
// database every time so that revocation needs no cache invalidation.
func (s *Service) VerifyToken(secret string) bool {
	if !strings.HasPrefix(secret, tokenPrefix) {
		return false
	}
	ok, err := s.db.NavTokenExists(hashToken(secret))
	return err == nil && ok
}
