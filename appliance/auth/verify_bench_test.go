package auth

import (
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// BenchmarkVerify: what checking a token's login against the revoked
// ones (one bbolt read) adds to a verification, measured against a
// token without a login (as issued before the check existed) in the same
// run: the figure to quote is the ratio.
func BenchmarkVerify(b *testing.B) {
	f := newFixture(b)
	u := f.user(b, "u@example.com", RoleUser)
	withFam := f.login(b, "u@example.com", testPassword).Token
	// The same claims without the login, signed with the same key.
	var c Claims
	if _, _, err := jwt.NewParser().ParseUnverified(withFam, &c); err != nil {
		b.Fatal(err)
	}
	c.Family = ""
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = f.s.keys.kid
	noFam, err := tok.SignedString(f.s.keys.priv)
	if err != nil {
		b.Fatal(err)
	}
	f.clk.Advance(time.Second)
	for _, v := range []struct{ name, tok string }{{"baseline-no-login", noFam}, {"with-login", withFam}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cl, err := f.s.Verify(v.tok); err != nil || cl.UserID != u.ID {
					b.Fatal(cl, err)
				}
			}
		})
	}
}
