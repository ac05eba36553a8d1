package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"beaconhub/appliance/auth"
	"beaconhub/appliance/config"
	"beaconhub/store"
)

var credLine = regexp.MustCompile(`(?m)^(email|password): +(\S+)$`)

func apiHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, "config"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, "config", "main.config.json"), []byte(`{"server_id":"apitest"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return home
}

func TestAPIAccountCreate(t *testing.T) {
	home := apiHome(t)
	var out, errb bytes.Buffer
	if code := run([]string{"api-account", "create", "erp-bridge", "--home", home}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	creds := map[string]string{}
	for _, m := range credLine.FindAllStringSubmatch(out.String(), -1) {
		creds[m[1]] = m[2]
	}
	if creds["email"] != "erp-bridge@api.local" || len(creds["password"]) < 16 {
		t.Fatalf("output:\n%s", out.String())
	}
	if strings.Contains(errb.String(), "new install") {
		t.Errorf("an install's own home noted as new: %s", errb.String())
	}

	db, err := store.Open(filepath.Join(home, "db", "service.db"), store.OpenOptions{LockTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	u, err := db.GetUserByEmail(creds["email"])
	if err != nil || u.Role != auth.RoleAPI || u.MustChangePassword {
		t.Fatalf("stored %+v %v", u, err)
	}
	if strings.Contains(u.PasswordHash, creds["password"]) || !strings.HasPrefix(u.PasswordHash, "$2") {
		t.Error("password not stored as a bcrypt hash")
	}
	cfg := config.Defaults(config.ActiveBrand())
	svc, err := auth.New(db, config.NewLive(cfg, nil, ""), auth.Options{BcryptCost: 4})
	if err != nil {
		t.Fatal(err)
	}
	res, err := svc.Login(creds["email"], creds["password"], "127.0.0.1")
	if err != nil || res.User.Role != auth.RoleAPI {
		t.Fatalf("login with the printed credentials: %v", err)
	}

	// While the database is held (a running service) the command refuses
	// with a way out, and prints no credentials.
	out.Reset()
	errb.Reset()
	if code := run([]string{"api-account", "create", "other", "--home", home}, &out, &errb); code != 1 ||
		!strings.Contains(errb.String(), "POST /api/v1/register") || out.Len() != 0 {
		t.Errorf("locked: exit %d out %q err %q", code, out.String(), errb.String())
	}
	_ = db.Close()

	// A name already taken is refused.
	errb.Reset()
	if code := run([]string{"api-account", "create", "--home", home, "erp-bridge@api.local"}, &out, &errb); code != 1 || !strings.Contains(errb.String(), "already exists") {
		t.Errorf("duplicate: exit %d %q", code, errb.String())
	}
}

func TestAPIAccountUsage(t *testing.T) {
	home := apiHome(t)
	for _, args := range [][]string{
		{"api-account"},
		{"api-account", "delete", "x"},
		{"api-account", "create", "--home", home},
		{"api-account", "create", "a", "b", "--home", home},
		{"api-account", "create", "bad name!", "--home", home},
		// The default admin's email: the first start makes the admin
		// under it (a review).
		{"api-account", "create", "Admin@BeaconHub.local", "--home", home},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 2 || out.Len() != 0 {
			t.Errorf("%v: exit %d out %q", args, code, out.String())
		}
	}
}

// On a home with no configuration (before the first start, or a mistyped
// --home) the account is made and the command says a new install was
// begun there, so a typo shows (a review).
func TestAPIAccountCreateSaysItBeganAnInstall(t *testing.T) {
	home := filepath.Join(t.TempDir(), "fresh")
	var out, errb bytes.Buffer
	if code := run([]string{"api-account", "create", "erp", "--home", home}, &out, &errb); code != 0 || !strings.Contains(errb.String(), "a new install was begun") {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
}
