package handlers

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"strings"
	"sync"
)

// A project of a large building is megabytes of JSON that compresses about
// tenfold, and every phone downloads the same version: the compressed
// answer is kept per project until its hash changes.

type navGzipCache struct {
	mu sync.Mutex
	m  map[uint64]gzEntry
}

type gzEntry struct {
	sha  string
	body []byte
}

// projectEnvelope is the success envelope writeJSON would produce for
// {"sha": sha, "project": data}, built around the bytes the hash covers.
func projectEnvelope(sha string, data []byte) []byte {
	var b bytes.Buffer
	b.Grow(len(data) + len(sha) + 80)
	b.WriteString(`{"type":"success","message":"ok","payload":{"project":`)
	b.Write(data)
	b.WriteString(`,"sha":"`)
	b.WriteString(sha) // hex: nothing to escape
	b.WriteString(`"}}`)
	return b.Bytes()
}

// acceptsGzip reads Accept-Encoding for gzip without q=0.
func acceptsGzip(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(params, " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

func (c *navGzipCache) compressed(id uint64, sha string, data []byte) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.m[id]
	c.mu.Unlock()
	if ok && e.sha == sha {
		return e.body, nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(projectEnvelope(sha, data)); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[uint64]gzEntry{}
	}
	c.m[id] = gzEntry{sha: sha, body: buf.Bytes()}
	return buf.Bytes(), nil
}

// writeProject answers a project, gzip-compressed when the client takes
// it; the caller has set ETag and Vary.
func (s *Server) writeProject(w http.ResponseWriter, r *http.Request, id uint64, sha string, data []byte) error {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	body := projectEnvelope(sha, data)
	if acceptsGzip(r) {
		gz, err := s.navGzip.compressed(id, sha, data)
		if err != nil {
			return err
		}
		h.Set("Content-Encoding", "gzip")
		body = gz
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
	return nil
}
