package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"beaconhub/appliance"
	"beaconhub/appliance/applog"
	"beaconhub/appliance/config"
)

// homeFlag registers --home with its $BEACONHUB_HOME / cwd default.
func homeFlag(fs *flag.FlagSet) *string {
	def := os.Getenv("BEACONHUB_HOME")
	if def == "" {
		def = "."
	}
	return fs.String("home", def, "install directory (config/, database, logs/)")
}

// homeCommand parses a maintenance subcommand's --home flag and loads the
// configuration there (read-only when check is set). A nil config means
// stop with the code returned: 0 after --help, else it printed why.
func homeCommand(name string, args []string, stderr io.Writer, check bool) (config.Paths, *config.Config, map[string]any, config.LoadResult, int) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := homeFlag(fs)
	if err := fs.Parse(args); err != nil {
		return config.Paths{}, nil, nil, config.LoadResult{}, flagExit(err)
	}
	if fs.NArg() > 0 {
		// A word the command does not take was ignored and the command
		// ran on the current directory (a black-box check).
		fmt.Fprintf(stderr, "%s takes no argument %q (only --home DIR)\n", name, fs.Arg(0))
		return config.Paths{}, nil, nil, config.LoadResult{}, 2
	}
	// A read-only look (config check, audit) creates nothing: audit made
	// the home and rewrote the file with defaults and fresh secrets, then
	// said it could not look (a black-box check).
	h, err := filepath.Abs(*home)
	if err == nil && !check {
		h, err = absHome(*home)
	}
	if err != nil {
		fmt.Fprintf(stderr, "home %s: %v\n", *home, err)
		return config.Paths{}, nil, nil, config.LoadResult{}, 1
	}
	paths := config.Paths{Home: h}
	load := config.Load
	if check {
		load = config.Check
	}
	cfg, extra, res, err := load(paths, config.ActiveBrand())
	if err != nil {
		fmt.Fprintf(stderr, "configuration is invalid: %v\n", err)
		return paths, nil, nil, res, 1
	}
	return paths, cfg, extra, res, 0
}

// flagExit is the exit code of a flag parse that failed: --help asked
// for the usage (0, as the top-level help), anything else is a usage
// error (2).
func flagExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 2
}

func absHome(h string) (string, error) {
	abs, err := filepath.Abs(h)
	if err != nil {
		return "", err
	}
	return abs, os.MkdirAll(abs, 0o750)
}

func cmdServe(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	home := homeFlag(fs)
	debug := fs.Bool("debug", false, "debug logging and diagnostic snapshots")
	listen := fs.String("http-listen", "", "override the HTTP listen address (default :server_http_port)")
	if err := fs.Parse(args); err != nil {
		return flagExit(err)
	}
	h, err := absHome(*home)
	if err != nil {
		fmt.Fprintf(stderr, "home %s: %v\n", *home, err)
		return 1
	}
	// Catch signals before anything binds a port, so a stop that arrives
	// during start-up still drains and closes the database cleanly.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	level := new(slog.LevelVar)
	if *debug {
		level.Set(slog.LevelDebug)
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level, ReplaceAttr: applog.Redact}))
	slog.SetDefault(log)

	app, err := appliance.New(appliance.Options{Home: h, Debug: *debug, Logger: log, LogLevel: level, HTTPListen: *listen})
	if err != nil {
		fmt.Fprintf(stderr, "beaconhub: %v\n", err)
		return 1
	}
	if err := app.Start(); err != nil {
		fmt.Fprintf(stderr, "beaconhub: %v\n", err)
		_ = app.Shutdown(context.Background())
		return 1
	}
	// "web page", not "web UI": the browser UI is not built yet (web/),
	// and the page at / says so and links the API reference.
	fmt.Fprintf(stdout, "BeaconHub is running: web page and API at http://%s/ (API reference at /integration/docs)\n", displayAddr(app.HTTPAddr()))
	if m := app.MQTTAddr(); m != "" {
		fmt.Fprintf(stdout, "Gateways publish to the embedded MQTT broker at %s\n", displayAddr(m))
	}
	if _, err := os.Stat(appliance.InitialPasswordFile(h)); err == nil {
		fmt.Fprintf(stdout, "First admin login: email and password are in %s\n", appliance.InitialPasswordFile(h))
	}

	sig := <-sigs
	log.Info("shutting down; a second signal exits at once", "signal", sig.String())
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		done <- app.Shutdown(ctx)
	}()
	select {
	case err := <-done:
		if err != nil {
			log.Error("shutdown", "err", err)
			return 1
		}
		log.Info("stopped")
		return 0
	case <-sigs:
		log.Warn("second signal: exiting without draining")
		return 130
	}
}

// displayAddr turns a wildcard bind into something a browser can open.
func displayAddr(a string) string {
	if len(a) > 0 && a[0] == ':' {
		return "localhost" + a
	}
	if len(a) > 5 && a[:5] == "[::]:" {
		return "localhost:" + a[5:]
	}
	if len(a) > 8 && a[:8] == "0.0.0.0:" {
		return "localhost:" + a[8:]
	}
	return a
}
