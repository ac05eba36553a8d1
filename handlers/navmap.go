package handlers

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
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
// the ASCII-compatible encoding its declaration names, by a WHATWG
// label (CAD exports on Central European sites declare ISO-8859-2 or
// windows-1250; a review found such a valid SVG refused as "not PNG,
// JPEG or SVG"). The bytes are stored as uploaded: a browser reads the
// same declaration. Only the first declaration counts: each further
// one wrapped the reader in one more decoder, and 16000 of them in
// 330 KB took 2 s and 190 MB to check (a review); svgSize refuses them.
func svgDecoder(data []byte) *xml.Decoder {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	dec := xml.NewDecoder(bytes.NewReader(data))
	// Only the document's own declaration, first in it, names its
	// encoding (XML 1.0 2.8); encoding/xml calls CharsetReader for every
	// <?xml?> PI it meets.
	first := bytes.HasPrefix(data, []byte("<?xml"))
	dec.CharsetReader = func(label string, in io.Reader) (io.Reader, error) {
		if !first {
			return nil, errors.New("an XML declaration that is not the document's first")
		}
		first = false
		enc, err := htmlindex.Get(label)
		if err != nil {
			return nil, err
		}
		switch name, _ := htmlindex.Name(enc); name {
		case "utf-8":
			return in, nil // checked as UTF-8, as undeclared
		case "utf-16le", "utf-16be", "replacement":
			return nil, fmt.Errorf("encoding %q cannot follow an ASCII declaration", label)
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
	// An ETag of the bytes, and revalidation: the app tells a replaced
	// floor plan from its cached one with a 304 instead of downloading it
	// again (there was nothing to revalidate with: a black-box check).
	w.Header().Set("Cache-Control", "private, no-cache")
	w.Header().Set("ETag", bytesETag(data))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
	return nil
}
