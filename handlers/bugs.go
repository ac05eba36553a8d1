package handlers

import (
	"bytes"
	"encoding/base64"
	"errors"
	"image"
	_ "image/jpeg" // registers the JPEG decoder for screenshot checks
	_ "image/png"  // registers the PNG decoder for screenshot checks
	"net/http"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

// In-app bug tracker (server_bug_tracker_enabled). Signed-in users file
// reports; admins list, read and close them. While the key is false every
// tracker route answers 404, as if the feature were not installed: the
// shell hides its button from ui_chrome.bug_tracker_enabled.

// Bug tracker limits.
const (
	maxBugText = 4000
	maxBugPage = 512
	// maxBugScreenshot keeps the base64 body inside the 1 MiB JSON limit.
	maxBugScreenshot = 700 << 10
	// maxOpenBugs bounds what one misbehaving client can store.
	maxOpenBugs = 500
)

var errBugsDisabled = apperr.NotFound("bug tracker is disabled")

func (s *Server) bugsEnabled() error {
	if !s.deps.Live.Get().BugTrackerEnabled {
		return errBugsDisabled
	}
	return nil
}

// sniffScreenshot accepts PNG and JPEG only, by content (the declared type
// is not trusted), and checks the image header parses.
func sniffScreenshot(data []byte) (string, error) {
	ct := http.DetectContentType(data)
	if ct != "image/png" && ct != "image/jpeg" {
		return "", apperr.InvalidField("screenshot", "screenshot must be a PNG or JPEG image")
	}
	if _, _, err := image.DecodeConfig(bytes.NewReader(data)); err != nil {
		return "", apperr.InvalidField("screenshot", "screenshot is not a readable image")
	}
	return ct, nil
}

func (s *Server) fileBug(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := s.bugsEnabled(); err != nil {
		return err
	}
	var in struct {
		Text       string `json:"text"`
		Page       string `json:"page"`
		Screenshot string `json:"screenshot"` // base64, optional
	}
	if err := decode(w, r, &in); err != nil {
		return err
	}
	in.Text = strings.TrimSpace(in.Text)
	switch {
	case in.Text == "":
		return apperr.InvalidField("text", "text is required")
	case len([]rune(in.Text)) > maxBugText:
		return apperr.InvalidField("text", "text must be at most %d characters", maxBugText)
	case len([]rune(in.Page)) > maxBugPage:
		return apperr.InvalidField("page", "page must be at most %d characters", maxBugPage)
	}
	var shot []byte
	rep := store.BugReport{Text: in.Text, Page: in.Page, Status: store.BugOpen, CreatedAt: s.now()}
	if in.Screenshot != "" {
		if base64.StdEncoding.DecodedLen(len(in.Screenshot)) > maxBugScreenshot+2 {
			return apperr.TooLarge("screenshot is larger than %d bytes", maxBugScreenshot)
		}
		var err error
		if shot, err = base64.StdEncoding.DecodeString(in.Screenshot); err != nil {
			return apperr.InvalidField("screenshot", "screenshot must be base64")
		}
		if len(shot) > maxBugScreenshot {
			return apperr.TooLarge("screenshot is larger than %d bytes", maxBugScreenshot)
		}
		if rep.ScreenshotType, err = sniffScreenshot(shot); err != nil {
			return err
		}
	}
	if n, err := s.deps.DB.CountBugReports(store.BugOpen); err != nil {
		return err
	} else if n >= maxOpenBugs {
		return apperr.Conflict("%d bug reports are open; an admin must close some first", n)
	}
	c := claimsFrom(r)
	rep.UserID, rep.UserEmail = c.UserID, c.Email
	rep, err := s.deps.DB.CreateBugReport(rep, shot)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "bug.create", "bug report", c.Email, "bug report filed")
	return created(w, rep)
}

func (s *Server) listBugs(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if err := s.bugsEnabled(); err != nil {
		return err
	}
	status := r.URL.Query().Get("status")
	if status != "" && status != store.BugOpen && status != store.BugClosed {
		return apperr.InvalidField("status", "status must be open or closed")
	}
	rs, err := s.deps.DB.ListBugReports(status)
	if err != nil {
		return err
	}
	return ok(w, map[string]any{"reports": rs})
}

func (s *Server) bugByID(p httprouter.Params) (*store.BugReport, error) {
	if err := s.bugsEnabled(); err != nil {
		return nil, err
	}
	id, err := pathID(p, "id")
	if err != nil {
		return nil, err
	}
	b, err := s.deps.DB.GetBugReport(id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apperr.NotFound("bug report not found")
	}
	return b, err
}

func (s *Server) getBug(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	b, err := s.bugByID(p)
	if err != nil {
		return err
	}
	return ok(w, b)
}

// bugScreenshot serves the stored image bytes with the sniffed type. The
// CSP sandbox keeps a crafted file from running anything if opened
// directly.
func (s *Server) bugScreenshot(w http.ResponseWriter, _ *http.Request, p httprouter.Params) error {
	b, err := s.bugByID(p)
	if err != nil {
		return err
	}
	data, err := s.deps.DB.BugScreenshot(b.ID)
	if errors.Is(err, store.ErrNotFound) {
		return apperr.NotFound("bug report has no screenshot")
	}
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", b.ScreenshotType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; sandbox")
	w.Header().Set("Cache-Control", "private, no-store")
	_, _ = w.Write(data)
	return nil
}

func (s *Server) closeBug(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	b, err := s.bugByID(p)
	if err != nil {
		return err
	}
	closed, err := s.deps.DB.CloseBugReport(b.ID, actor(r), s.now())
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "bug.close", "bug report", actor(r), "bug report closed")
	return ok(w, closed)
}
