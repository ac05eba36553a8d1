package handlers

import (
	"net/http"
	"testing"
)

// The default admin's password comes from the install files; until it is
// changed the account may do nothing but change it.
func TestMustChangePasswordBlocksEverythingElse(t *testing.T) {
	h := newHarness(t)
	if _, err := h.auth.CreateUser("fresh@example.org", "initial-pass-1", "admin", true); err != nil {
		t.Fatal(err)
	}
	r, res := h.loginHTTP("fresh@example.org", "initial-pass-1")
	r.expect(t, http.StatusOK)
	if !res.MustChangePassword {
		t.Fatal("login payload does not say the password must change")
	}
	for _, path := range []string{"/api/v1/users", "/api/v1/features", "/api/v1/settings", "/api/v1/logs"} {
		got := h.get(path, res.Token)
		if got.Code != http.StatusForbidden || got.Message != msgMustChange {
			t.Fatalf("%s before the change: %d %q", path, got.Code, got.Message)
		}
	}
	cp := h.send("POST", "/api/v1/change-password", res.Token, map[string]string{"current_password": "initial-pass-1", "new_password": "changed-pass-2"})
	cp.expect(t, http.StatusOK)
	_, res2 := h.loginHTTP("fresh@example.org", "changed-pass-2")
	h.get("/api/v1/users", res2.Token).expect(t, http.StatusOK)
}
