package handlers

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestNavTokenMatrix: a navigation token passes the guard of every
// Token/Auth route and of nothing else, and a revoked one fails at once.
func TestNavTokenMatrix(t *testing.T) {
	h, admin := newNavHarness(t)
	var tok struct {
		Token string `json:"token"`
		ID    uint64 `json:"id"`
	}
	h.send("POST", "/api/v1/navigation/tokens", admin, map[string]any{"name": "kiosk"}).expect(t, http.StatusCreated).decodePayload(t, &tok)
	if tok.Token == "" || tok.ID == 0 {
		t.Fatalf("token %+v", tok)
	}
	asToken := func(method, path string, secret string) *response {
		return h.do(req{method: method, path: path, body: bodyFor(method), header: map[string]string{"Authorization": "Token " + secret}})
	}
	tokenRoutes := 0
	for _, rt := range h.srv.Routes() {
		if rt.Guard == None || rt.Guard == DBOnly {
			continue
		}
		r := asToken(rt.Method, concretePath(rt.Path), tok.Token)
		if rt.Guard == TokenAuth {
			tokenRoutes++
			if r.isGuardRefusal() {
				t.Errorf("%s %s: token refused (%d %q)", rt.Method, rt.Path, r.Code, r.Message)
			}
			continue
		}
		if r.Code != http.StatusForbidden || !r.isGuardRefusal() {
			t.Errorf("%s %s: token accepted on a %s route (%d %q)", rt.Method, rt.Path, rt.Guard, r.Code, r.Message)
		}
	}
	if tokenRoutes == 0 {
		t.Fatal("no Token/Auth routes")
	}
	// Wrong secrets and the token in a Bearer header are refused.
	if r := asToken("POST", "/api/v1/navigation/pathfind", tok.Token+"x"); !r.isGuardRefusal() {
		t.Errorf("wrong token accepted: %d", r.Code)
	}
	if r := h.send("POST", "/api/v1/navigation/pathfind", tok.Token, "{}"); !r.isGuardRefusal() {
		t.Errorf("token as bearer accepted: %d", r.Code)
	}

	var list []map[string]any
	h.get("/api/v1/navigation/tokens", admin).expect(t, http.StatusOK).decodePayload(t, &struct {
		Tokens *[]map[string]any `json:"tokens"`
	}{&list})
	if len(list) != 1 || list[0]["hash"] != nil || list[0]["token"] != nil {
		t.Fatalf("token list leaks or misses: %v", list)
	}
	h.send("DELETE", "/api/v1/navigation/token/"+strconv.FormatUint(tok.ID, 10), admin, nil).expect(t, http.StatusOK)
	if r := asToken("POST", "/api/v1/navigation/pathfind", tok.Token); r.Code != http.StatusForbidden || !r.isGuardRefusal() {
		t.Fatalf("revoked token: %d %q", r.Code, r.Message)
	}
	h.send("DELETE", "/api/v1/navigation/token/"+strconv.FormatUint(tok.ID, 10), admin, nil).expect(t, http.StatusNotFound)
}

// A navigation token needs a name, as other display names do: nameless
// ones could not be told apart in the list to revoke the right one (a
// black-box check).
func TestNavTokenNeedsAName(t *testing.T) {
	h, admin := newNavHarness(t)
	for _, body := range []map[string]any{{}, {"name": ""}, {"name": "   "}, {"name": "kiosk\n3"}} {
		r := h.send("POST", "/api/v1/navigation/tokens", admin, body)
		checkErrorEnvelope(t, "token without a usable name", r, http.StatusBadRequest)
		if !strings.Contains(r.Body, `"field":"name"`) {
			t.Errorf("%v: %s, want field name", body, r.Body)
		}
	}
}
