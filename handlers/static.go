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
		return s.serveFile(w, name)
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
		return s.serveFile(w, dir+"/"+f)
	}
}

func (s *Server) serveFile(w http.ResponseWriter, name string) error {
	if s.deps.Static == nil {
		return apperr.NotFound("no such file")
	}
	return writeEmbedded(w, s.deps.Static, name, http.DetectContentType)
}

// writeEmbedded answers one embedded file: its type from the extension
// (else fallback(data)), nosniff, and caching: index.html revalidated,
// assets kept an hour.
func writeEmbedded(w http.ResponseWriter, fsys fs.FS, name string, fallback func([]byte) string) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return apperr.NotFound("no such file")
	}
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = fallback(data)
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if name == "index.html" {
		w.Header().Set("Cache-Control", "no-cache")
	} else {
		w.Header().Set("Cache-Control", "public, max-age=3600")
	}
	_, _ = w.Write(data)
	return nil
}

// assetName reports whether a :filename parameter names a file directly in
// its folder: no separators, nothing hidden (and so no "..").
func assetName(f string) bool {
	return f != "" && !strings.ContainsAny(f, `/\`) && !strings.HasPrefix(f, ".")
}
