// Package pushtest is a minimal fake push (ntfy) server for the status
// probes: GET /v1/health and JSON publishes to the root. It records
// publishes and can be told to fail or rate-limit. The full ntfy fake of
// the push subsystem builds on the same surface.
package pushtest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Message is one JSON publish (ntfy's publish-as-JSON body).
type Message struct {
	Topic    string   `json:"topic"`
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Tags     []string `json:"tags"`
	Priority int      `json:"priority"`
	Auth     string   `json:"-"`
}

// Server is the fake.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// HealthStatus and PublishStatus replace the answer's status when set
	// (e.g. 429, 503).
	HealthStatus, PublishStatus int
	// Unhealthy answers {"healthy":false}.
	Unhealthy bool
	healthN   int
	msgs      []Message
}

// New starts a fake on 127.0.0.1.
func New() *Server {
	s := &Server{}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", s.health)
	mux.HandleFunc("POST /{$}", s.publish)
	s.Server = httptest.NewServer(mux)
	return s
}

// Set changes knobs under the lock.
func (s *Server) Set(fn func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// HealthChecks counts health requests.
func (s *Server) HealthChecks() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.healthN
}

// Messages returns the accepted publishes.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

func (s *Server) health(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	s.healthN++
	st, bad := s.HealthStatus, s.Unhealthy
	s.mu.Unlock()
	if st != 0 {
		if st == http.StatusTooManyRequests {
			w.Header().Set("Retry-After", "30")
		}
		w.WriteHeader(st)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]bool{"healthy": !bad})
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	var m Message
	if err := json.Unmarshal(raw, &m); err != nil || m.Topic == "" {
		http.Error(w, `{"code":40001,"error":"invalid request"}`, http.StatusBadRequest)
		return
	}
	m.Auth = r.Header.Get("Authorization")
	s.mu.Lock()
	st := s.PublishStatus
	if st == 0 {
		s.msgs = append(s.msgs, m)
	}
	s.mu.Unlock()
	if st != 0 {
		w.WriteHeader(st)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"id": "m1", "event": "message", "topic": m.Topic, "title": m.Title, "message": m.Message})
}
