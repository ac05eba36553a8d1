package handlers

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/text/encoding/htmlindex"
	"golang.org/x/text/transform"
)

// Floor images: the navigation app's copy of a floor's plan, served to
// navigation tokens (which read no map endpoint), apart from the map the
// floor's map_id names.

const maxFloorImage = 5 << 20

// svgDecoder reads data as XML: UTF-8 (a byte-order mark aside), or
// any encoding its declaration names that the WHATWG encoding standard
// knows (CAD exports on Central European sites declare ISO-8859-2 or
// windows-1250; a review found such a valid SVG refused as "not PNG,
// JPEG or SVG"). The bytes are stored as uploaded: a browser reads the
// same declaration.
func svgDecoder(data []byte) *xml.Decoder {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		enc, err := htmlindex.Get(label)
		if err != nil {
			return nil, err
		}
		return transform.NewReader(in, enc.NewDecoder()), nil
	}
	return dec
}

// sniffImage trusts the bytes, never the client's Content-Type. An SVG is
// XML whose first element is <svg>, whatever precedes it (a declaration,
// comments, a DOCTYPE: exported floor plans often open with a generator
// or licence comment of any length); svgSize then judges the whole
// document.
func sniffImage(data []byte) (string, bool) {
	switch ct := http.DetectContentType(data); ct {
	case "image/png", "image/jpeg":
		return ct, true
	}
	dec := svgDecoder(data)
	for {
		tok, err := dec.RawToken()
		if err != nil {
			return "", false
		}
		switch t := tok.(type) {
		case xml.StartElement:
			if strings.EqualFold(t.Name.Local, "svg") {
				return "image/svg+xml", true
			}
			return "", false
		case xml.CharData:
			if len(bytes.TrimSpace(t)) > 0 {
				return "", false // text before the root: not XML
			}
		}
	}
}

func (s *Server) putFloorImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.nav(); err != nil {
		return err
	}
	id, err := pathID(p, "id")
	if err != nil {
		return err
	}
	data, err := readAllUpload(http.MaxBytesReader(w, r.Body, maxFloorImage))
	if err != nil {
		return err
	}
	ct, isImage := sniffImage(data)
	if !isImage {
		return apperr.Invalid("the floor image must be PNG, JPEG or SVG")
	}
	// The same checks as a map image: a damaged or malformed image would
	// be shipped to every phone and drawn broken.
	if _, _, err := checkUpload(r.Context(), ct, data); err != nil {
		return err
	}
	if err := s.deps.DB.PutFloorImage(id, ct, data); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return apperr.NotFound("floor not found")
		}
		return err
	}
	s.navRecord(r, "floor.map", "floor", id, "image replaced ("+ct+")")
	return ok(w, map[string]any{"id": id, "content_type": ct, "size": len(data)})
}

func (s *Server) floorImage(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	if _, err := s.nav(); err != nil {
		return err
	}
	id, err := pathID(p, "id")
	if err != nil {
		return err
	}
	ct, data, err := s.deps.DB.FloorImage(id)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("floor %d has no image", id)
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", ct)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	// An SVG may carry script; never let it run in our origin.
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	return nil
}
