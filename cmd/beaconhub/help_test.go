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
	} {
		var out, errb bytes.Buffer
		if code := run(args, &out, &errb); code != 0 || out.Len()+errb.Len() == 0 {
			t.Errorf("%s: exit %d, usage %q", strings.Join(args, " "), code, out.String()+errb.String())
		}
	}
	var out, errb bytes.Buffer
	if code := run([]string{"serve", "--bogus"}, &out, &errb); code != 2 {
		t.Errorf("serve --bogus: exit %d", code)
	}
}
