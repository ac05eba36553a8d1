// Package appliance is the composition root: it builds every subsystem from
// the configuration, starts the ones server_features asks for, and stops
// them in reverse order. The domain lives in one sub-package per subsystem.
package appliance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"beaconhub/appliance/alerting"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/assets"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/bridge"
	"beaconhub/appliance/clock"
	"beaconhub/appliance/config"
	"beaconhub/appliance/diag"
	"beaconhub/appliance/eink"
	"beaconhub/appliance/ingest"
	"beaconhub/appliance/nav"
	"beaconhub/appliance/push"
	"beaconhub/appliance/sensors"
	"beaconhub/appliance/status"
	"beaconhub/handlers"
	"beaconhub/store"
	"beaconhub/web"
)

// Options tune how the appliance is built.
type Options struct {
	Home   string
	Debug  bool
	Logger *slog.Logger
	// LogLevel, when set, is raised to Debug while server_mode is debug.
	LogLevel *slog.LevelVar
	Clock    clock.Clock
	// HTTPListen overrides ":<server_http_port>" (tests bind 127.0.0.1:0).
	HTTPListen string
	// MQTTListen overrides server_mqtt_listen (tests bind 127.0.0.1:0).
	MQTTListen string
	// BcryptCost lowers password hashing cost in tests.
	BcryptCost int
}

// App is a built appliance.
type App struct {
	opts   Options
	paths  config.Paths
	live   *config.Live
	log    *slog.Logger
	clock  clock.Clock
	load   config.LoadResult
	db     *store.DB
	auth   *auth.Service
	applog *applog.Log
	diag   *diag.Snapshotter

	writer   *store.Writer
	registry *assets.Registry
	assets   *assets.Service
	pipeline *ingest.Pipeline
	recorder *sensors.Recorder
	eink     *eink.Service
	nav      *nav.Service
	mqtt     mqttSource
	events   *alerting.Service // feature alerting (alerting.go)
	alertsys *alerting.Worker
	monitor  *status.Monitor
	push     *push.Service // push notifications (push.go)
	pushIDs  *pushIdentity // devices for push messages (push.go)
	// pushCancel ends push's context; set by startPush, taken by stopPush.
	pushMu     sync.Mutex
	pushCancel context.CancelFunc
	stopping   atomic.Bool

	// sensorMon evaluates sensor conditions (appliance/sensors.go).
	sensorMon *sensors.Monitor
	// hooks connect the registry to the running pipeline and to everything
	// that follows uid renames (appliance/mqtt.go, rtls.go).
	hooks assets.IngestHooks

	// bridge feeds the monitoring server (appliance/bridge.go).
	bridge *bridge.Bridge
	// rtls is the tracking engine and its wiring (appliance/rtls.go).
	rtls *rtlsControl

	httpSrv *http.Server
	httpLn  net.Listener

	stopOnce sync.Once
	stops    []func(ctx context.Context) error // run in reverse on shutdown
}

// InitialPasswordFile is where the first admin password is written on a
// fresh install, so `make run` can say where to find it.
func InitialPasswordFile(home string) string {
	return filepath.Join(home, "config", "initial-admin-password")
}

// New loads the configuration and builds every enabled subsystem.
func New(opts Options) (*App, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	paths := config.Paths{Home: opts.Home}
	cfg, extra, res, err := config.Load(paths, config.ActiveBrand())
	if err != nil {
		return nil, err
	}
	a := &App{opts: opts, paths: paths, log: opts.Logger, clock: opts.Clock, load: res,
		live: config.NewLive(cfg, extra, paths.ConfigFile())}
	if res.Migrated {
		a.log.Info("configuration migrated into config/", "file", paths.ConfigFile())
	}
	a.live.Pin(res.Pinned)
	for _, k := range res.EnvKeys {
		a.log.Info("configuration key overridden by the environment", "key", k)
	}
	for _, k := range res.UnknownKeys {
		a.log.Warn("unknown configuration key kept as is", "key", k)
	}
	for _, d := range res.Degraded {
		a.log.Warn("configuration value not valid, partly ignored", "detail", d)
	}
	if res.StrayLegacy {
		a.log.Warn("configuration file in the home root ignored: only config/main.config.json is read; merge its edits there and remove it",
			"ignored", paths.LegacyFile())
	}
	for _, d := range cfg.Advice(config.ActiveBrand()) {
		a.log.Warn("configuration: " + d)
	}
	if err := os.MkdirAll(paths.LogDir(), 0o750); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	if err := a.build(); err != nil {
		a.closeAll()
		return nil, err
	}
	return a, nil
}

// needsDB is false only for a bridge-only deployment, which keeps no
// database of its own.
func (a *App) needsDB() bool {
	for _, f := range a.live.Get().EnabledFeatures() {
		if f != config.FeatureBridge {
			return true
		}
	}
	return false
}

func (a *App) build() error {
	cfg := a.live.Get()
	if cfg.Has(config.FeatureBridge) {
		// The database's lock keeps a second process off a home; a
		// bridge-only box has none, and two bridges on one home both fed
		// the monitoring server (a black-box check), as did a full server
		// and a bridge-only process started beside it on its home (a
		// review). Every process running the bridge takes this lock.
		unlock, err := lockHome(filepath.Join(a.paths.Home, "bridge.lock"))
		if err != nil {
			return err
		}
		a.onStop(func(context.Context) error { unlock(); return nil })
	}
	if a.needsDB() {
		db, err := store.Open(a.paths.DBFile(cfg), store.OpenOptions{})
		if err != nil {
			return err
		}
		a.db = db
		a.onStop(func(context.Context) error { return db.Close() })
		if from, to, moved := db.Migrated(); moved {
			a.log.Info("database schema migrated; an older binary no longer opens this file (restore a backup to go back)", "from", from, "to", to)
		}
		a.applog = applog.New(db, a.live, a.clock, a.log)
		// Where an admin looks, not only in the process log.
		for _, d := range a.load.Degraded {
			a.applog.Record(applog.Normal, "config", "configuration", "system", "value not valid, partly ignored: "+d)
		}
		if a.load.StrayLegacy {
			a.applog.Record(applog.Normal, "config", "configuration", "system",
				"main.config.json in the home root is ignored: only config/main.config.json is read")
		}
		as, err := auth.New(db, a.live, auth.Options{Clock: a.clock, BcryptCost: a.opts.BcryptCost, Logger: a.log,
			PasswordChanged: a.forgetInitialPassword})
		if err != nil {
			return err
		}
		a.auth = as
		if err := a.ensureAdmin(); err != nil {
			return err
		}
		// The registry runs wherever the database does; ingest, when it
		// runs, resolves MACs through the same cache.
		svc, err := assets.NewService(assets.Options{DB: db, Clock: a.clock, Logger: a.log})
		if err != nil {
			return fmt.Errorf("asset registry: %w", err)
		}
		a.assets, a.registry = svc, svc.Registry()
		if a.needsIngest() {
			if err := a.buildIngest(); err != nil {
				return err
			}
		}
		if err := a.buildRTLS(); err != nil {
			return err
		}
		a.buildEink()
		if err := a.buildNav(); err != nil {
			return err
		}
	}
	if err := a.buildBridge(); err != nil {
		return err
	}
	a.diag = diag.New(a.live, a.paths, a.clock, a.log, a.opts.Debug)
	a.onStop(func(context.Context) error { a.diag.Close(); return nil })
	if a.opts.LogLevel != nil {
		apply := func(_, c *config.Config) {
			if a.opts.Debug || c.ServerMode == "debug" {
				a.opts.LogLevel.Set(slog.LevelDebug)
			} else {
				a.opts.LogLevel.Set(slog.LevelInfo)
			}
		}
		apply(nil, cfg)
		a.live.Subscribe(apply)
	}
	return nil
}

// ensureAdmin creates the default admin on first install and writes its
// password to a 0600 file next to the configuration; the file is removed
// once that password has been changed.
func (a *App) ensureAdmin() error {
	created, err := a.auth.EnsureDefaultAdmin()
	if err != nil {
		return fmt.Errorf("create default admin: %w", err)
	}
	file := InitialPasswordFile(a.paths.Home)
	cfg := a.live.Get()
	if created {
		body := fmt.Sprintf("email: %s\npassword: %s\n", cfg.DefaultEmail, cfg.DefaultPassword)
		if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
			return fmt.Errorf("write initial admin password: %w", err)
		}
		a.log.Info("default admin created; change its password after the first login", "email", cfg.DefaultEmail, "file", file)
		return nil
	}
	if u, err := a.db.GetUserByEmail(cfg.DefaultEmail); err == nil && !u.MustChangePassword {
		_ = os.Remove(file)
	}
	return nil
}

// forgetInitialPassword removes the first admin's password file once
// that account's password has changed: the file's password no longer
// works, and docs/config.md says it goes then, not at the next start.
func (a *App) forgetInitialPassword(email string) {
	if store.NormalizeEmail(email) != store.NormalizeEmail(a.live.Get().DefaultEmail) { // as accounts are matched
		return
	}
	file := InitialPasswordFile(a.paths.Home)
	if err := os.Remove(file); err == nil {
		a.log.Info("initial admin password file removed: the password was changed", "file", file)
	} else if !errors.Is(err, os.ErrNotExist) {
		a.log.Warn("initial admin password file not removed", "file", file, "err", err)
	}
}

func (a *App) onStop(fn func(ctx context.Context) error) { a.stops = append(a.stops, fn) }

// Live returns the live configuration.
func (a *App) Live() *config.Live { return a.live }

// DB returns the store (nil in bridge-only mode).
func (a *App) DB() *store.DB { return a.db }

// Auth returns the auth service (nil in bridge-only mode).
func (a *App) Auth() *auth.Service { return a.auth }

// Paths returns the install paths.
func (a *App) Paths() config.Paths { return a.paths }

// Handler builds the HTTP handler.
func (a *App) Handler() http.Handler {
	d := handlers.Deps{Live: a.live, DB: a.db, Auth: a.auth, AppLog: a.applog, Logger: a.log, Static: web.FS(), Assets: a.assets, Sensors: a.sensorsService()}
	d.EInk = a.eink
	d.Nav = a.nav
	d.Clock = a.clock
	if a.push != nil {
		d.Push = a.push
	}
	if a.pipeline != nil {
		d.Status = a
	}
	if a.monitor != nil {
		d.Monitor = a.monitor
	}
	if a.rtls != nil {
		d.RTLS = a.rtls
	}
	srv := handlers.New(d)
	// The WebSocket hub outlives http.Server.Shutdown (hijacked
	// connections are not the server's); it closes with the subsystems,
	// right after the tracking engine: registered here, it closed before
	// the engine and sent 1001 without the engine's last frames (a
	// review).
	if a.rtls != nil {
		a.diag.AddSource("websocket", srv.FeedStats)
		a.rtls.closeFeeds = append(a.rtls.closeFeeds, srv.Close)
	} else {
		a.onStop(func(context.Context) error { srv.Close(); return nil })
	}
	return srv
}

// Start binds the listeners and starts the enabled subsystems.
func (a *App) Start() error {
	cfg := a.live.Get()
	addr := a.opts.HTTPListen
	if addr == "" {
		addr = ":" + strconv.Itoa(cfg.HTTPPort)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("HTTP listen on %s: %w", addr, err)
	}
	a.httpLn = ln
	a.httpSrv = &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	go func() {
		if err := a.httpSrv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("HTTP server stopped", "err", err)
		}
	}()
	a.diag.Start()
	if a.pipeline != nil {
		a.diag.AddSource("mqtt", a.MQTTStatus)
	}
	if a.rtls != nil {
		a.diag.AddSource("tracking", a.rtls.diagSection())
	}
	if a.pipeline != nil {
		if err := a.startIngest(); err != nil {
			return err
		}
	}
	if a.bridge != nil {
		if err := a.bridgeFollowsListener(cfg, ln.Addr()); err != nil {
			// An address no URL can name (an IPv6 zone): the bridge
			// keeps the configured URL rather than stop the start.
			a.log.Warn("bridge: reading the main server at server_bridge_server_url, not at this process's address", "err", err)
		}
		a.bridge.Start()
	}
	a.log.Info("beaconhub started", "http", ln.Addr().String(), "features", cfg.EnabledFeatures(), "home", a.paths.Home)
	return nil
}

// bridgeFollowsListener points the bridge of a full server whose
// server_bridge_server_url is the default (http://localhost:8088/) at
// the address this process serves on: with another server_http_port or
// --http-listen the default reached another program, or nothing, and
// the bridge reported the main server unreachable (a review). A bridge-
// only box (no database, no API here) keeps the URL it was given.
func (a *App) bridgeFollowsListener(cfg *config.Config, bound net.Addr) error {
	if a.db == nil || cfg.BridgeServerURL != config.Defaults(config.ActiveBrand()).BridgeServerURL {
		return nil
	}
	host, port, err := net.SplitHostPort(bound.String())
	if err != nil {
		return err
	}
	// Every interface: loopback is one of them. Go listens on [::] dual
	// stack (IPV6_V6ONLY off), so 127.0.0.1 reaches it as 0.0.0.0 does.
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	// An IPv6 zone (fe80::1%eth0) is written %25 in a URL.
	return a.bridge.UseServer("http://" + net.JoinHostPort(strings.Replace(host, "%", "%25", 1), port) + "/")
}

// HTTPAddr is the bound HTTP address.
func (a *App) HTTPAddr() string {
	if a.httpLn == nil {
		return ""
	}
	return a.httpLn.Addr().String()
}

// Shutdown stops accepting, drains in-flight requests and work, then closes
// the subsystems and the store, in reverse order of start.
func (a *App) Shutdown(ctx context.Context) error {
	var first error
	a.stopOnce.Do(func() {
		a.stopping.Store(true)
		if a.httpSrv != nil {
			if err := a.httpSrv.Shutdown(ctx); err != nil {
				first = err
			}
		}
		if err := a.closeAll(); err != nil && first == nil {
			first = err
		}
	})
	return first
}

func (a *App) closeAll() error {
	var first error
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for i := len(a.stops) - 1; i >= 0; i-- {
		if err := a.stops[i](ctx); err != nil && first == nil {
			first = err
		}
	}
	a.stops = nil
	return first
}
