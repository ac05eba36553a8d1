package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestHelpIsNotAUsageError: --help on a subcommand printed its usage and
// exited 2, as a wrong flag does; `beaconhub help` exits 0, and so now do
// they (a black-box check). A wrong flag stays 2.
func TestHelpIsNotAUsageError(t *testing.T) {
	for _, args := range [][]string{
		{"serve", "--help"}, {"audit", "--help"}, {"config", "check", "--help"},
		{"mobile-key", "regenerate", "-h"}, {"api-account", "create", "--help"}, {"loadgen", "--help"},
		{"rtls-eval", "--help"}, {"fingerprint-eval", "--help"},
		{"config", "--help"}, {"mobile-key", "-h"}, {"api-account", "--help"},
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || out.Len()+errb.Len() == 0 {
			t.Errorf("%s: exit %d, usage %q", strings.Join(args, " "), code, out.String()+errb.String())
		}
	}
	var out, errb bytes.Buffer
	for _, args := range [][]string{{"serve", "--bogus"}, {"config"}, {"config", "chek"}, {"api-account", "list"}} {
		if code := run(args, &out, &errb); code != 2 {
			t.Errorf("%s: exit %d, want 2", strings.Join(args, " "), code)
		}
	}
}
