package handlers

// Route is one entry of the route table.
type Route struct {
	Method string
	Path   string
	Guard  Guard
	h      handlerFunc
}

// table lists every route, its method and its guard, on one screen. A route
// added here is picked up by the guard-matrix test automatically.
func (s *Server) table() []Route {
	return []Route{
		// Static frontend and well-known documents.
		{"GET", "/", None, s.static("index.html")},
		{"GET", "/index.html", None, s.static("index.html")},
		{"GET", "/css/:filename", None, s.staticDir("css")},
		{"GET", "/js/:filename", None, s.staticDir("js")},
		{"GET", "/images/:filename", None, s.staticDir("images")},
		{"GET", "/webfonts/:filename", None, s.staticDir("webfonts")},
		{"GET", "/.well-known/jwks.json", None, s.jwks},

		// Authentication and users.
		{"POST", "/api/v1/login", DBOnly, s.login},
		{"POST", "/api/v1/auth/refresh", DBOnly, s.refresh},
		{"POST", "/api/v1/register", Admin, s.register},
		{"POST", "/api/v1/change-password", Auth, s.changePassword},
		{"GET", "/api/v1/users", Admin, s.listUsers},
		{"GET", "/api/v1/users/:userId", Admin, s.getUser},
		{"DELETE", "/api/v1/users/:userId", Admin, s.deleteUser},

		// Settings, features, logs, version, status.
		{"GET", "/api/v1/settings", Admin, s.getSettings},
		{"PATCH", "/api/v1/settings", Admin, s.patchSettings},
		{"GET", "/api/v1/features", Auth, s.features},
		{"GET", "/api/v1/logs", Auth, s.logs},
		{"GET", "/api/v1/version", None, s.version},
		{"GET", "/api/v1/status/mqtt", Auth, s.statusMQTT},
	}
}
