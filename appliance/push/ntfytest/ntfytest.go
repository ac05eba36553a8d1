// Package ntfytest is a fake ntfy server for the push subsystem's tests,
// served over real HTTP on 127.0.0.1. It mirrors the parts of ntfy's API
// BeaconHub uses: JSON publish to the root URL, bearer-token auth, the
// 4096-byte message limit, a rate limiter answering 429 with ntfy's JSON
// error body (Retry-After only when asked), the multi-topic subscribe
// endpoint /t1,t2/json (poll=1 and streaming), the token API
// (POST /v1/account/token with basic auth) and GET /v1/health.
package ntfytest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
)

// MessageLimit is ntfy's default message-size-limit (bytes).
const MessageLimit = 4096

// Message is a stored publish, in ntfy's subscribe-stream shape.
type Message struct {
	ID       string   `json:"id"`
	Time     int64    `json:"time"`
	Event    string   `json:"event"`
	Topic    string   `json:"topic"`
	Title    string   `json:"title,omitempty"`
	Message  string   `json:"message"`
	Tags     []string `json:"tags,omitempty"`
	Priority int      `json:"priority,omitempty"`
}

// Server is the fake. Knobs are changed through Set.
type Server struct {
	*httptest.Server

	mu sync.Mutex
	// Tokens, when non-empty, makes publishing require one of them as
	// "Authorization: Bearer". Empty allows anonymous publishing.
	Tokens map[string]bool
	// Users maps user -> password for the token API; nil answers 404
	// (a server without the account API).
	Users map[string]string
	// RateLimited answers the next RateLimited publishes with 429.
	RateLimited int
	// RetryAfter, when > 0, adds a Retry-After header (seconds) to 429s.
	// ntfy itself sends none; a proxy in front of it may, in seconds or
	// as an HTTP date (RetryAfterText, sent as it is, wins).
	RetryAfter     int
	RetryAfterText string
	// FailStatus answers the next FailN publishes with this status (5xx).
	FailStatus, FailN int
	// Delay stalls every publish (for timeout tests).
	Delay time.Duration

	msgs     []Message
	attempts int
	subs     map[chan Message][]string
}

// New starts the fake on 127.0.0.1.
func New() *Server {
	s := &Server{subs: map[chan Message][]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, 200, map[string]bool{"healthy": true})
	})
	mux.HandleFunc("POST /{$}", s.publish)
	mux.HandleFunc("POST /v1/account/token", s.token)
	mux.HandleFunc("GET /{topics}/json", s.subscribe)
	s.Server = httptest.NewServer(mux)
	return s
}

// Set changes knobs under the lock.
func (s *Server) Set(fn func(s *Server)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	fn(s)
}

// Messages returns every accepted publish, oldest first.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.msgs...)
}

// Attempts counts publish requests, accepted or not.
func (s *Server) Attempts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts
}

// ntfy's error body: {"code":42901,"http":429,"error":"...","link":"..."}
// (codes and texts as in ntfy's server/errors.go).
func apiError(w http.ResponseWriter, status, code int, msg string) {
	body := map[string]any{"code": code, "http": status, "error": msg}
	if status == http.StatusTooManyRequests {
		body["link"] = "https://ntfy.sh/docs/publish/#limitations"
	}
	writeJSON(w, status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) publish(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.attempts++
	delay := s.Delay
	s.mu.Unlock()
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}
	var in struct {
		Topic    string   `json:"topic"`
		Title    string   `json:"title"`
		Message  string   `json:"message"`
		Tags     []string `json:"tags"`
		Priority int      `json:"priority"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10)).Decode(&in); err != nil || in.Topic == "" {
		apiError(w, 400, 40001, "invalid request: request body must be message JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Tokens) > 0 {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || !s.Tokens[tok] {
			apiError(w, 403, 40301, "forbidden")
			return
		}
	}
	switch {
	case s.RateLimited > 0:
		s.RateLimited--
		if s.RetryAfterText != "" {
			w.Header().Set("Retry-After", s.RetryAfterText)
		} else if s.RetryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(s.RetryAfter))
		}
		apiError(w, 429, 42901, "limit reached: too many requests")
		return
	case s.FailN > 0:
		s.FailN--
		apiError(w, s.FailStatus, 50001, "internal server error")
		return
	case len(in.Message) > MessageLimit:
		// ntfy turns a message above its limit into an attachment; the
		// fake models a server without attachment storage, which refuses
		// it, so a client that does not split is caught.
		apiError(w, 413, 41301, "attachment too large, or bandwidth limit reached")
		return
	case in.Priority < 0 || in.Priority > 5:
		apiError(w, 400, 40007, "invalid priority")
		return
	}
	m := Message{ID: fmt.Sprintf("m%06d", len(s.msgs)+1), Time: time.Now().Unix(), Event: "message",
		Topic: in.Topic, Title: in.Title, Message: in.Message, Tags: in.Tags, Priority: in.Priority}
	s.msgs = append(s.msgs, m)
	for ch, topics := range s.subs {
		if contains(topics, m.Topic) {
			select {
			case ch <- m:
			default:
			}
		}
	}
	writeJSON(w, 200, m)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// token mints an access token like ntfy's POST /v1/account/token.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Users == nil {
		apiError(w, 404, 40401, "page not found")
		return
	}
	u, p, ok := r.BasicAuth()
	if !ok || s.Users[u] == "" || s.Users[u] != p {
		apiError(w, 401, 40101, "unauthorized")
		return
	}
	tok := fmt.Sprintf("tk_fake%024d", len(s.Tokens)+1)
	if s.Tokens == nil {
		s.Tokens = map[string]bool{}
	}
	s.Tokens[tok] = true
	writeJSON(w, 200, map[string]any{"token": tok, "last_access": time.Now().Unix()})
}

// subscribe serves /t1,t2/json: poll=1 returns cached messages and closes;
// otherwise an "open" event then one JSON line per new message.
func (s *Server) subscribe(w http.ResponseWriter, r *http.Request) {
	topics := strings.Split(r.PathValue("topics"), ",")
	enc := json.NewEncoder(w)
	w.Header().Set("Content-Type", "application/x-ndjson; charset=utf-8")
	if r.URL.Query().Get("poll") == "1" {
		for _, m := range s.Messages() {
			if contains(topics, m.Topic) {
				_ = enc.Encode(m)
			}
		}
		return
	}
	ch := make(chan Message, 64)
	s.mu.Lock()
	s.subs[ch] = topics
	s.mu.Unlock()
	defer func() { s.mu.Lock(); delete(s.subs, ch); s.mu.Unlock() }()
	_ = enc.Encode(map[string]any{"id": "open", "time": time.Now().Unix(), "event": "open", "topic": strings.Join(topics, ",")})
	flush(w)
	for {
		select {
		case m := <-ch:
			_ = enc.Encode(m)
			flush(w)
		case <-r.Context().Done():
			return
		}
	}
}

func flush(w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
}
