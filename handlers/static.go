package handlers

import (
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"

	"beaconhub/appliance/apperr"

	"github.com/julienschmidt/httprouter"
)

// static serves one file of the embedded frontend.
func (s *Server) static(name string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
		return s.serveFile(w, r, name)
	}
}

// staticDir serves /dir/:filename from the embedded frontend; the name may
// not climb out of its folder.
func (s *Server) staticDir(dir string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		f := p.ByName("filename")
		if !assetName(f) {
			return apperr.NotFound("no such file")
		}
		return s.serveFile(w, r, dir+"/"+f)
	}
}

// frontendCSP is the web frontend's policy: its own scripts, styles and
// API only (a data: favicon), never framed. The frontend keeps its JWT
// in localStorage (spec), so a policy is the second line against script
// injection, and frame-ancestors against clickjacking; the shell had
// neither while /integration/docs had both (a black-box check).
const frontendCSP = "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) serveFile(w http.ResponseWriter, r *http.Request, name string) error {
	if s.deps.Static == nil {
		return apperr.NotFound("no such file")
	}
	w.Header().Set("Content-Security-Policy", frontendCSP)
	w.Header().Set("X-Frame-Options", "DENY")
	w.Header().Set("Referrer-Policy", "no-referrer")
	return writeEmbedded(w, r, s.deps.Static, name, http.DetectContentType)
}

// writeEmbedded answers one embedded file: its type from the extension
// (else fallback(data)), nosniff, an ETag of its bytes, and no-cache, so
// that a browser revalidates each time (a 304 when unchanged) and an
// upgrade's new script and style are taken at once. Before, the fixed
// names were kept an hour, so after an upgrade the old script ran against
// the new API, and index.html had nothing to revalidate with (a
// black-box check).
func writeEmbedded(w http.ResponseWriter, r *http.Request, fsys fs.FS, name string, fallback func([]byte) string) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return apperr.NotFound("no such file")
	}
	tag := bytesETag(data)
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = fallback(data)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("ETag", tag)
	if notModified(w, r, tag) {
		return nil
	}
	_, _ = w.Write(data)
	return nil
}

// assetName reports whether a :filename parameter names a file directly in
// its folder: no separators, nothing hidden (and so no "..").
func assetName(f string) bool {
	return f != "" && !strings.ContainsAny(f, `/\`) && !strings.HasPrefix(f, ".")
}
