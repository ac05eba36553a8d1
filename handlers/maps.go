package handlers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"time"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/config"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// Maps (spec "Maps"): floor plans for zones, gateway placement and the
// tracking canvas. An image is uploaded first (POST /maps/upload answers
// its image_id and pixel size) and a map then names it. The bytes decide
// the type (sniffImage, shared with floor images), never the file name or
// the client's Content-Type.

// maxMapImage bounds an uploaded map image (same as a floor image).
const maxMapImage = maxFloorImage

const maxMapName = 100

// mapInput is the body of POST /api/v1/maps and POST /api/v1/map/:id.
// Width and height override what the image says (needed only for an SVG
// without width/height or viewBox).
type mapInput struct {
	Name           string   `json:"name"`
	LocationID     uint64   `json:"location_id"`
	PixelsPerMeter float64  `json:"pixels_per_meter"`
	ImageID        uint64   `json:"image_id"`
	Width          *float64 `json:"width"`
	Height         *float64 `json:"height"`
}

// readUpload returns the uploaded bytes: the first file part of a
// multipart/form-data body (what a browser form sends), else the raw body.
func readUpload(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, maxMapImage+64<<10)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if mt != "multipart/form-data" {
		return readAllUpload(body)
	}
	r.Body = body
	mr, err := r.MultipartReader()
	if err != nil {
		return nil, apperr.Invalid("malformed multipart body")
	}
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return nil, apperr.Invalid("the multipart body has no file part")
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return nil, err
			}
			return nil, apperr.Invalid("malformed multipart body")
		}
		if part.FileName() == "" {
			continue
		}
		return readAllUpload(io.LimitReader(part, maxMapImage+1))
	}
}

// readAllUpload reads an uploaded image. A body that ends before its
// framing does (a file part without its closing boundary, a client gone
// halfway through its Content-Length) is the client's error, 400: it
// was answered 500 and logged as the server's (a review). Past the size
// cap it stays a MaxBytesError, 413.
func readAllUpload(rd io.Reader) ([]byte, error) {
	data, err := io.ReadAll(rd)
	var mbe *http.MaxBytesError
	if err != nil && !errors.As(err, &mbe) {
		return nil, apperr.Invalid("the upload is cut short or malformed (a file part without its closing boundary, or a body shorter than its Content-Length)")
	}
	return data, err
}

// navigationOn reports whether feature navigation is configured (the
// navigation service itself is built on every box with a database).
func (s *Server) navigationOn() bool {
	if s.deps.Live == nil {
		return s.deps.Nav != nil
	}
	return s.deps.Live.Get().Has(config.FeatureNavigation)
}

// needMaps serves h only where a subsystem that uses maps runs: the
// spec's feature navigation lists maps and zones, and the tracking
// engine (feature rtls) locates beacons in their zones. With neither,
// the routes answer as the navigation ones do when it is off.
func (s *Server) needMaps(h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
		if !s.navigationOn() && s.deps.RTLS == nil {
			return apperr.Unavailable("maps are not running in this configuration: they need feature navigation or rtls")
		}
		return h(w, r, p)
	}
}

// uploadMap: POST /api/v1/maps/upload (admin).
func (s *Server) uploadMap(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	data, err := readUpload(w, r)
	// The body's cap leaves room for multipart framing; either way the
	// client is told the image's limit, not the framing's.
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || err == nil && len(data) > maxMapImage {
		return apperr.TooLarge("a map image may be at most %d bytes (5 MiB)", maxMapImage)
	}
	if err != nil {
		return err
	}
	ct, isImage := sniffImage(data)
	if !isImage {
		return apperr.Invalid("the map image must be PNG, JPEG or SVG")
	}
	wd, ht, err := checkUpload(r.Context(), ct, data)
	if err != nil {
		return err
	}
	id, err := s.deps.DB.PutMapImage(ct, data)
	if err != nil {
		return err
	}
	return created(w, map[string]any{"image_id": id, "content_type": ct, "size": len(data), "width": wd, "height": ht})
}

func (s *Server) listMaps(w http.ResponseWriter, _ *http.Request, _ httprouter.Params) error {
	maps, err := s.deps.DB.ListMaps()
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"maps": maps})
}

func (s *Server) getMap(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	return ok(w, m)
}

func (s *Server) mapByParam(p httprouter.Params) (store.Map, error) {
	id, err := pathID(p, "id")
	if err != nil {
		return store.Map{}, err
	}
	m, err := s.deps.DB.GetMap(id)
	if errors.Is(err, store.ErrNotFound) {
		return m, apperr.NotFound("map %d not found", id)
	}
	return m, err
}

// createMap: POST /api/v1/maps (admin); saveMap: POST /api/v1/map/:id.
func (s *Server) createMap(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	return s.saveMap(w, r, p)
}

func (s *Server) saveMap(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	var m store.Map
	if p.ByName("id") != "" {
		old, err := s.mapByParam(p)
		if err != nil {
			return err
		}
		m = old
	}
	var in mapInput
	if err := decode(w, r, &in); err != nil {
		return err
	}
	name, err := apperr.CleanName("name", in.Name, maxMapName)
	if err != nil {
		return err
	}
	in.Name = name
	switch {
	case in.PixelsPerMeter < 0 || in.PixelsPerMeter > 10000 || math.IsNaN(in.PixelsPerMeter):
		return apperr.InvalidField("pixels_per_meter", "pixels_per_meter must be between 0 (unknown) and 10000")
	case in.ImageID == 0:
		return apperr.InvalidField("image_id", "image_id is required: upload the image with POST /api/v1/maps/upload")
	}
	img, err := s.deps.DB.GetMapImage(in.ImageID)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.InvalidField("image_id", "image %d does not exist", in.ImageID)
	}
	if err != nil {
		return err
	}
	if in.LocationID != 0 {
		if err := s.checkLocation(in.LocationID); err != nil {
			return err
		}
	}
	wd, ht, err := imageSize(img.ContentType, img.Data)
	if err != nil {
		return err
	}
	for _, o := range []struct {
		v    *float64
		dst  *float64
		name string
	}{{in.Width, &wd, "width"}, {in.Height, &ht, "height"}} {
		if o.v != nil {
			if !(*o.v >= 1 && *o.v <= maxImageSide) {
				return apperr.InvalidField(o.name, "%s must be between 1 and %d pixels", o.name, maxImageSide)
			}
			*o.dst = *o.v
		}
	}
	if wd < 1 || ht < 1 {
		return apperr.InvalidField("width", "the image does not state its size; give width and height in pixels")
	}
	// An image stored before uploads refused huge sizes may state one;
	// width and height given here override it, as above.
	if wd > maxImageSide || ht > maxImageSide {
		return apperr.InvalidField("image_id", "the image states %gx%g pixels; at most %d a side (give width and height to override)", wd, ht, maxImageSide)
	}
	m.Name, m.LocationID, m.PixelsPerMeter, m.ImageID = in.Name, in.LocationID, in.PixelsPerMeter, in.ImageID
	m.ContentType, m.Width, m.Height = img.ContentType, wd, ht
	isNew := m.ID == 0
	m, err = s.deps.DB.PutMap(m, s.nowTime())
	var inv *store.InvalidError
	if errors.As(err, &inv) {
		return apperr.Conflict("%s", inv.Msg) // a zone or gateway in the way of a new size
	}
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "map.save", "map "+strconv.FormatUint(m.ID, 10), actor(r), "map "+m.Name+" saved")
	if err := s.reloadSite(); err != nil {
		return err
	}
	if isNew {
		return created(w, m)
	}
	return ok(w, m)
}

func (s *Server) checkLocation(id uint64) error {
	reg, err := s.registry()
	if err != nil {
		return err
	}
	locs, err := reg.Locations()
	if err != nil {
		return err
	}
	for _, l := range locs {
		if l.ID == id {
			return nil
		}
	}
	return apperr.InvalidField("location_id", "location %d does not exist", id)
}

// deleteMap: DELETE /api/v1/map/:id (admin). It cascades to the map's
// zones (and the adjacencies and survey samples that name them) and its
// gateway placements.
func (s *Server) deleteMap(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	m, err := s.mapByParam(p)
	if err != nil {
		return err
	}
	del, err := s.deps.DB.DeleteMap(m.ID, s.nowTime())
	if err != nil {
		return err
	}
	msg := "map " + m.Name + " deleted with " + strconv.Itoa(del.Zones) + " zones"
	if len(del.Floors) > 0 {
		msg += "; floors " + joinIDs(del.Floors) + " no longer show a plan"
	}
	s.deps.AppLog.Record(applog.Normal, "map.delete", "map "+strconv.FormatUint(m.ID, 10), actor(r), msg)
	if err := s.reloadSite(); err != nil {
		return err
	}
	return ok(w, map[string]any{"id": m.ID, "deleted_zones": del.Zones, "unlinked_floors": del.Floors})
}

// mapImage: GET /api/v1/maps/image?id=<map id> (or ?image_id= for an
// upload not yet attached to a map). An SVG is served under a CSP that
// forbids scripts and sandboxes the document, with nosniff, so it cannot
// run in our origin.
func (s *Server) mapImage(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q := r.URL.Query()
	var imageID uint64
	switch {
	case q.Get("id") != "":
		m, err := s.mapByParam(httprouter.Params{{Key: "id", Value: q.Get("id")}})
		if err != nil {
			return err
		}
		imageID = m.ImageID
	case q.Get("image_id") != "":
		// An upload not yet attached is the admin's draft: others see a
		// plan through its map.
		if c := claimsFrom(r); c == nil || c.Role != auth.RoleAdmin {
			return apperr.Forbidden("image_id (an upload not yet on a map) is for admins; use id, a map id")
		}
		id, err := pathID(httprouter.Params{{Key: "image_id", Value: q.Get("image_id")}}, "image_id")
		if err != nil {
			return err
		}
		imageID = id
	default:
		return apperr.InvalidField("id", "query id (a map id) is required")
	}
	img, err := s.deps.DB.GetMapImage(imageID)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("image not found")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", img.ContentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; sandbox")
	// The same URL serves a new image once the map's is replaced, so the
	// browser revalidates every time and an unchanged image costs a 304.
	// The ETag is the content's hash, not the image id: ids restart with
	// a database restored from backup, and a browser would keep its copy
	// of another floor's plan.
	w.Header().Set("Cache-Control", "private, no-cache")
	tag, ok := s.imageTags.Load(imageID)
	if !ok {
		sum := sha256.Sum256(img.Data)
		tag, _ = s.imageTags.LoadOrStore(imageID, `"`+hex.EncodeToString(sum[:16])+`"`)
	}
	w.Header().Set("ETag", tag.(string))
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(img.Data))
	return nil
}

// joinIDs writes ids as "1, 2, 3" for a log line.
func joinIDs(ids []uint64) string {
	b := make([]byte, 0, 4*len(ids))
	for i, id := range ids {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = strconv.AppendUint(b, id, 10)
	}
	return string(b)
}
