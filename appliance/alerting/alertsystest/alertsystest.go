// Package alertsystest is a fake alertsys for tests: it speaks the wire
// format documented in docs/alertsys.md (login, then convene with a bearer
// token), records every call, and can be told to fail, answer slowly, answer
// bad JSON or expire its tokens. It decodes with its own types on purpose,
// so a change of the client's wire format breaks the tests.
package alertsystest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"time"
)

// Default paths, as in the configuration defaults.
const (
	LoginPath   = "/api/Mobile/LoginUser"
	ConvenePath = "/api/Mobile/ExecuteConveneByRule"
)

// Credentials the fake accepts unless changed.
const (
	User = "alertsys-user"
	Pass = "alertsys-pass"
)

// Convene is one recorded convene call.
type Convene struct {
	At             time.Time
	Token          string
	IdempotencyKey string
	Body           ConveneBody
	Raw            []byte
}

// ConveneBody mirrors the documented request.
type ConveneBody struct {
	Rule       string `json:"rule"`
	EventID    uint64 `json:"event_id"`
	ServerID   string `json:"server_id"`
	Press      string `json:"press"`
	OccurredAt int64  `json:"occurred_at"`
	Asset      struct {
		AssetUID string `json:"asset_uid"`
		Name     string `json:"name"`
		Type     string `json:"type"`
		MAC      string `json:"mac"`
	} `json:"asset"`
	Location struct {
		ID   uint64 `json:"id"`
		Name string `json:"name"`
	} `json:"location"`
	HeardBy struct {
		Gateway  string `json:"gateway"`
		AssetUID string `json:"asset_uid"`
		Name     string `json:"name"`
		Location string `json:"location"`
	} `json:"heard_by"`
}

// Server is the fake. Zero-valued knobs mean "behave".
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// User and Pass are the accepted credentials.
	User, Pass string
	// TokenTTL is sent as expires_in (seconds); 0 omits it.
	TokenTTL int
	// FailStatus answers every request with this status while set.
	FailStatus int
	// FailLogin / FailConvene answer only that endpoint with the status.
	FailLogin, FailConvene int
	// RetryAfter, when set, is sent as Retry-After with those failures.
	RetryAfter string
	// BadJSON answers 200 with a body that is not JSON.
	BadJSON bool
	// Slow makes every convene take this long to answer (a loaded
	// alertsys, for benchmarks; tests use Hold).
	Slow time.Duration
	// OneSession makes each login end the user's earlier sessions: only
	// the newest token is accepted, as some servers do.
	OneSession bool
	// Hold makes handlers wait until Release (or the client gives up).
	hold    chan struct{}
	held    int // requests waiting in hold
	logins  int
	convs   []Convene
	tokens  map[string]bool
	seq     int
	onConv  func(Convene)
	message string
}

// New starts a fake on 127.0.0.1.
func New() *Server {
	s := &Server{User: User, Pass: Pass, TokenTTL: 900, tokens: map[string]bool{}, message: "Convene started"}
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+LoginPath, s.login)
	mux.HandleFunc("POST "+ConvenePath, s.convene)
	s.Server = httptest.NewServer(mux)
	return s
}

// Set changes knobs under the lock: s.Set(func(s *Server){ s.FailStatus = 503 }).
func (s *Server) Set(fn func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// Hold makes every request wait until Release or until the client's
// request is cancelled (its timeout), to test slowness without sleeping.
func (s *Server) Hold() {
	s.mu.Lock()
	s.hold = make(chan struct{})
	s.mu.Unlock()
}

// Release lets held requests continue.
func (s *Server) Release() {
	s.mu.Lock()
	if s.hold != nil {
		close(s.hold)
		s.hold = nil
	}
	s.mu.Unlock()
}

// ExpireTokens forgets every issued token: the next convene gets 401.
func (s *Server) ExpireTokens() {
	s.mu.Lock()
	s.tokens = map[string]bool{}
	s.mu.Unlock()
}

// OnConvene sets a hook called for each accepted convene (benchmarks
// timestamp arrivals with it).
func (s *Server) OnConvene(fn func(Convene)) {
	s.mu.Lock()
	s.onConv = fn
	s.mu.Unlock()
}

// Logins counts login requests (accepted or not).
func (s *Server) Logins() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.logins
}

// Convenes returns the accepted convene calls.
func (s *Server) Convenes() []Convene {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Convene(nil), s.convs...)
}

func (s *Server) wait(r *http.Request) {
	s.mu.Lock()
	h := s.hold
	if h != nil {
		s.held++
	}
	s.mu.Unlock()
	if h == nil {
		return
	}
	select {
	case <-h:
	case <-r.Context().Done():
	}
	s.mu.Lock()
	s.held--
	s.mu.Unlock()
}

// Held is how many requests are waiting in Hold now.
func (s *Server) Held() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.held
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	s.wait(r)
	var in struct {
		Username string `json:"username"`
		Password string `json:"password"`
	}
	err := json.NewDecoder(r.Body).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.logins++
	switch {
	case s.FailStatus != 0:
		w.WriteHeader(s.FailStatus)
	case s.FailLogin != 0:
		w.WriteHeader(s.FailLogin)
	case err != nil:
		w.WriteHeader(http.StatusBadRequest)
	case in.Username != s.User || in.Password != s.Pass:
		w.WriteHeader(http.StatusUnauthorized)
	case s.BadJSON:
		_, _ = w.Write([]byte("<html>oops"))
	default:
		s.seq++
		tok := "tok-" + strconv.Itoa(s.seq)
		if s.OneSession {
			s.tokens = map[string]bool{}
		}
		s.tokens[tok] = true
		out := map[string]any{"token": tok}
		if s.TokenTTL > 0 {
			out["expires_in"] = s.TokenTTL
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

func (s *Server) convene(w http.ResponseWriter, r *http.Request) {
	s.wait(r)
	s.mu.Lock()
	slow := s.Slow
	s.mu.Unlock()
	if slow > 0 {
		select {
		case <-time.After(slow):
		case <-r.Context().Done():
			return
		}
	}
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	tok := ""
	if h := r.Header.Get("Authorization"); len(h) > 7 {
		tok = h[7:]
	}
	s.mu.Lock()
	switch {
	case s.FailStatus != 0:
		w.WriteHeader(s.FailStatus)
		s.mu.Unlock()
		return
	case !s.tokens[tok]:
		w.WriteHeader(http.StatusUnauthorized)
		s.mu.Unlock()
		return
	case s.FailConvene != 0:
		if s.RetryAfter != "" {
			w.Header().Set("Retry-After", s.RetryAfter)
		}
		w.WriteHeader(s.FailConvene)
		s.mu.Unlock()
		return
	}
	c := Convene{At: time.Now(), Token: tok, IdempotencyKey: r.Header.Get("Idempotency-Key"), Raw: raw}
	if err := json.Unmarshal(raw, &c.Body); err != nil {
		w.WriteHeader(http.StatusBadRequest)
		s.mu.Unlock()
		return
	}
	s.convs = append(s.convs, c)
	hook, bad, msg := s.onConv, s.BadJSON, s.message
	s.mu.Unlock()
	if hook != nil {
		hook(c)
	}
	if bad {
		_, _ = w.Write([]byte("{not json"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "convene_id": fmt.Sprintf("cv-%d", c.Body.EventID),
		"message": msg + ": " + c.Body.Location.Name})
}
