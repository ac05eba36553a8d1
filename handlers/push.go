package handlers

import (
	"encoding/base64"
	"errors"
	"net/http"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/push"

	"github.com/julienschmidt/httprouter"
)

// companionQR mints the companion-app QR (POST /api/v1/companion/qr).
// Body: {"categories": [...], "confirm_unchecked": bool}; categories
// omitted means the operational defaults. The answer carries the PNG
// (base64), the encoded payload text and how many silent snapshots were
// published. Restricted push keys are never part of it.
func (s *Server) companionQR(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	noStore(w)
	if s.deps.Push == nil {
		return apperr.Unavailable("push notifications are not running in this configuration")
	}
	var body struct {
		Categories []string `json:"categories"`
		Confirm    bool     `json:"confirm_unchecked"`
	}
	if r.ContentLength != 0 {
		if err := decode(w, r, &body); err != nil {
			return err
		}
	}
	qr, err := s.deps.Push.Companion(r.Context(), body.Categories, body.Confirm)
	switch {
	case errors.Is(err, push.ErrConfirmRequired):
		return apperr.InvalidField("confirm_unchecked", "%s", err.Error())
	case errors.Is(err, push.ErrTokenAPI):
		return apperr.Unavailable("could not mint a subscribe token: %s", err.Error())
	case errors.Is(err, push.ErrServerURLAt):
		return apperr.Conflict("%s", err.Error())
	case err != nil:
		return apperr.InvalidField("categories", "%s", err.Error())
	}
	return ok(w, map[string]any{
		"png_base64": base64.StdEncoding.EncodeToString(qr.PNG),
		"text":       qr.Text,
		"payload":    qr.Payload,
		"token_kind": qr.TokenKind,
		"snapshots":  qr.Snapshots,
	})
}
