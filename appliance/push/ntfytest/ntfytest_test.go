package ntfytest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, s *Server, body, token string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL+"/", strings.NewReader(body))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestFakeBehavesLikeNtfy(t *testing.T) {
	s := New()
	defer s.Close()
	s.Set(func(s *Server) { s.Tokens = map[string]bool{"tk_a": true}; s.RateLimited = 1 })
	if res := post(t, s, `{"topic":"x-sos","message":"m"}`, ""); res.StatusCode != 403 {
		t.Fatalf("anonymous: %d", res.StatusCode)
	}
	res := post(t, s, `{"topic":"x-sos","message":"m"}`, "tk_a")
	var e struct {
		Code int `json:"code"`
		HTTP int `json:"http"`
	}
	_ = json.NewDecoder(res.Body).Decode(&e)
	if res.StatusCode != 429 || e.Code != 42901 || e.HTTP != 429 || res.Header.Get("Retry-After") != "" {
		t.Fatalf("429: %d %+v", res.StatusCode, e)
	}
	big := `{"topic":"x-sos","message":"` + strings.Repeat("a", MessageLimit+1) + `"}`
	if res := post(t, s, big, "tk_a"); res.StatusCode != 413 {
		t.Fatalf("oversize: %d", res.StatusCode)
	}
	post(t, s, `{"topic":"x-sos","title":"T","message":"one","tags":["warning"],"priority":5}`, "tk_a")
	post(t, s, `{"topic":"x-health","message":"two"}`, "tk_a")
	post(t, s, `{"topic":"x-other","message":"three"}`, "tk_a")
	res2, err := http.Get(s.URL + "/x-sos,x-health/json?poll=1")
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(res2.Body)
	var got []Message
	for sc.Scan() {
		var m Message
		_ = json.Unmarshal(sc.Bytes(), &m)
		got = append(got, m)
	}
	if len(got) != 2 || got[0].Title != "T" || got[0].Priority != 5 || got[1].Topic != "x-health" {
		t.Fatalf("subscribe: %+v", got)
	}
	// Token API: 404 without accounts, 401 on bad credentials, a token otherwise.
	tokReq := func(u, p string) int {
		req, _ := http.NewRequest("POST", s.URL+"/v1/account/token", nil)
		req.SetBasicAuth(u, p)
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return r.StatusCode
	}
	if c := tokReq("m", "p"); c != 404 {
		t.Fatalf("no account API: %d", c)
	}
	s.Set(func(s *Server) { s.Users = map[string]string{"m": "p"} })
	if c := tokReq("m", "bad"); c != 401 {
		t.Fatalf("bad password: %d", c)
	}
	if c := tokReq("m", "p"); c != 200 {
		t.Fatalf("token: %d", c)
	}
}

func TestFakeStreamsMultiTopicSubscription(t *testing.T) {
	s := New()
	defer s.Close()
	res, err := http.Get(s.URL + "/a-sos,a-health/json")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"event":"open"`) {
		t.Fatalf("open event: %q", sc.Text())
	}
	post(t, s, `{"topic":"a-other","message":"not mine"}`, "")
	post(t, s, `{"topic":"a-health","message":"mine"}`, "")
	if !sc.Scan() {
		t.Fatal(sc.Err())
	}
	var m Message
	if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m.Topic != "a-health" || m.Message != "mine" || m.Event != "message" {
		t.Fatalf("%+v %v", m, err)
	}
}
