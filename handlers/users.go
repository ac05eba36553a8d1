package handlers

import (
	"net"
	"net/http"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/auth"
	"beaconhub/store"

	"github.com/julienschmidt/httprouter"
)

func (s *Server) jwks(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.deps.Auth == nil {
		return apperr.NotFound("no key set in this configuration")
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(s.deps.Auth.JWKS())
	return nil
}

// clientIP is the TCP peer: forwarding headers are not trusted, so they
// cannot be used to dodge the login throttle.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

func (s *Server) login(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.deps.Auth == nil {
		return apperr.Invalid(msgDBNotReady)
	}
	var body struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if strings.TrimSpace(body.Email) == "" {
		return apperr.InvalidField("email", "email and password are required")
	}
	if body.Password == "" {
		return apperr.InvalidField("password", "email and password are required")
	}
	res, err := s.deps.Auth.Login(body.Email, body.Password, clientIP(r))
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Verbose, "login", res.User.Email, res.User.Email, "user logged in")
	noStore(w)
	return ok(w, res)
}

func (s *Server) refresh(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if s.deps.Auth == nil {
		return apperr.Invalid(msgDBNotReady)
	}
	var body struct {
		RefreshToken string `json:"refresh_token"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	res, err := s.deps.Auth.Refresh(body.RefreshToken)
	if err != nil {
		return err
	}
	noStore(w)
	return ok(w, res)
}

func (s *Server) register(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var body struct {
		Email      string `json:"email"`
		Password   string `json:"password"`
		Role       string `json:"role"`
		LocationID uint64 `json:"location_id"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if body.Role == "" {
		body.Role = auth.RoleUser
	}
	u, err := s.deps.Auth.CreateScopedUser(body.Email, body.Password, body.Role, body.LocationID, false)
	if err != nil {
		return err
	}
	actor := claimsFrom(r).Email
	s.deps.AppLog.Record(applog.Normal, "user.create", u.Email, actor, "user "+u.Email+" created with role "+u.Role)
	return created(w, auth.Public(u))
}

func (s *Server) changePassword(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var body struct {
		CurrentPassword string `json:"current_password"`
		NewPassword     string `json:"new_password"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	c := claimsFrom(r)
	res, err := s.deps.Auth.ChangePassword(c.UserID, body.CurrentPassword, body.NewPassword)
	if err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "user.password", c.Email, c.Email, "password changed")
	noStore(w)
	return ok(w, res)
}

func (s *Server) listUsers(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	us, err := s.deps.DB.ListUsers()
	if err != nil {
		return err
	}
	out := make([]auth.PublicUser, 0, len(us))
	for i := range us {
		out = append(out, auth.Public(&us[i]))
	}
	return ok(w, map[string]any{"users": out})
}

// userByID is account id (404 when there is none).
func (s *Server) userByID(id uint64) (*store.User, error) {
	u, err := s.deps.DB.GetUser(id)
	if err == store.ErrNotFound {
		return nil, apperr.NotFound("user not found")
	}
	return u, err
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := pathID(p, "userId")
	if err != nil {
		return err
	}
	u, err := s.userByID(id)
	if err != nil {
		return err
	}
	return ok(w, auth.Public(u))
}

// updateUser: PATCH /api/v1/users/:userId (admin), body {role?,
// location_id?, password?}: the spec shows no account lifecycle beyond
// create and delete, and without it a role or scope change, or a
// forgotten password, meant deleting the account (its id, template and
// sessions) and making it again (a black-box check).
func (s *Server) updateUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := pathID(p, "userId")
	if err != nil {
		return err
	}
	var body struct {
		Role       *string `json:"role"`
		LocationID *uint64 `json:"location_id"`
		Password   *string `json:"password"`
	}
	if err := decode(w, r, &body); err != nil {
		return err
	}
	if body.Role == nil && body.LocationID == nil && body.Password == nil {
		return apperr.Invalid("nothing to change: send role, location_id or password")
	}
	before, err := s.userByID(id)
	if err != nil {
		return err
	}
	u, err := s.deps.Auth.UpdateUser(id, auth.UserChange{Role: body.Role, LocationID: body.LocationID, Password: body.Password})
	if err != nil {
		return err
	}
	var what []string
	if u.Role != before.Role {
		what = append(what, "role "+before.Role+" -> "+u.Role)
	}
	if u.LocationID != before.LocationID {
		what = append(what, "location "+strconv.FormatUint(before.LocationID, 10)+" -> "+strconv.FormatUint(u.LocationID, 10))
	}
	if body.Password != nil {
		what = append(what, "password reset (to change at next login)")
	}
	if len(what) > 0 {
		s.deps.AppLog.Record(applog.Normal, "user.update", u.Email, claimsFrom(r).Email, "user "+u.Email+": "+strings.Join(what, "; "))
	}
	return ok(w, auth.Public(u))
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request, p httprouter.Params) error {
	id, err := pathID(p, "userId")
	if err != nil {
		return err
	}
	u, err := s.userByID(id)
	if err != nil {
		return err
	}
	if err := s.deps.Auth.DeleteUser(id); err != nil {
		return err
	}
	s.deps.AppLog.Record(applog.Normal, "user.delete", u.Email, claimsFrom(r).Email, "user "+u.Email+" deleted")
	return ok(w, map[string]any{"id": id})
}
