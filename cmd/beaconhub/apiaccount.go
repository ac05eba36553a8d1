package main

import (
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/appliance/auth"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

// apiAccountName is what NAME may be when it is not an email address.
var apiAccountName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// apiAccountDomain completes a bare NAME into the account's login email.
const apiAccountDomain = "api.local"

// cmdAPIAccount is `beaconhub api-account create NAME [--home DIR]`: it
// creates an `api` role account with a generated password and prints the
// credentials once on stdout. Only the bcrypt hash is stored and nothing
// is logged. It opens the database directly, so it runs while the service
// is stopped; on a running box an admin uses POST /api/v1/register with
// role api instead.
func cmdAPIAccount(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "create" {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var names, flags []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--home" || a == "-home":
			flags = append(flags, a)
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		case strings.HasPrefix(a, "-"):
			flags = append(flags, a)
		default:
			names = append(names, a)
		}
	}
	for _, f := range flags {
		if isHelp(f) {
			fmt.Fprint(stdout, usage)
			return 0
		}
	}
	if len(names) != 1 {
		fmt.Fprintf(stderr, "api-account create needs exactly one NAME\n\n%s", usage)
		return 2
	}
	email := names[0]
	if !strings.Contains(email, "@") {
		if !apiAccountName.MatchString(email) {
			fmt.Fprintf(stderr, "NAME must be an email address or 1 to 64 of A-Z, a-z, 0-9, '.', '_' and '-'\n")
			return 2
		}
		email += "@" + apiAccountDomain
	}
	paths, cfg, _, res, code := homeCommand("api-account create", flags, stderr, false)
	if cfg == nil {
		return code
	}
	if res.Created {
		// Before the first start this is how an install begins; with a
		// mistyped --home it is an install nobody runs, and the account
		// is not where it is wanted (a review): say which it was.
		fmt.Fprintf(stderr, "note: no configuration was at %s: a new install was begun there (if that is not the service's home, remove it and pass the right --home)\n", paths.ConfigFile())
	}
	if store.NormalizeEmail(email) == store.NormalizeEmail(cfg.DefaultEmail) {
		// The first start creates the admin under it (a review: taken
		// by an api account, the box had no admin).
		fmt.Fprintf(stderr, "%s is the default admin's email (server_credentials_default_email); choose another NAME\n", email)
		return 2
	}
	file := paths.DBFile(cfg)
	db, err := store.Open(file, store.OpenOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "%v\nstop beaconhub first, or create the account on the running service with POST /api/v1/register and role api\n", err)
		return 1
	}
	defer db.Close()
	svc, err := auth.New(db, config.NewLive(cfg, nil, ""), auth.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		fmt.Fprintf(stderr, "auth: %v\n", err)
		return 1
	}
	password := config.RandomSecret()
	u, err := svc.CreateUser(email, password, auth.RoleAPI, false)
	if err != nil {
		if e, ok := apperr.As(err); ok {
			fmt.Fprintf(stderr, "cannot create %s: %s\n", email, e.Msg)
		} else {
			fmt.Fprintf(stderr, "cannot create %s: %v\n", email, err)
		}
		return 1
	}
	fmt.Fprintf(stdout, "api account %d created. The password is shown this once; only its hash is stored.\n", u.ID)
	fmt.Fprintf(stdout, "email:    %s\npassword: %s\n", u.Email, password)
	fmt.Fprintf(stdout, "Log in with POST /api/v1/login; the account may call only the /api/v1/integration/ endpoints (docs at /integration/docs).\n")
	return 0
}
