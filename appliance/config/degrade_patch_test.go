package config

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// A snapshot directory outside the home, kept from the file (Degrade),
// sent back unchanged with another setting (a form posting its group,
// as GET /settings showed it): the other setting must be saved and the
// directory kept, not the whole PATCH refused (a review).
func TestDegradedValueSentBackUnchangedIsKept(t *testing.T) {
	home := t.TempDir()
	writeConfig(t, home, `{"server_debug_log_dir": "/var/log/beaconhub"}`)
	c, extra, res, err := Check(Paths{Home: home}, testBrand)
	if err != nil || len(res.Degraded) != 1 {
		t.Fatalf("Check: %v %v", err, res.Degraded)
	}
	p := Paths{Home: home}
	live := NewLive(c, extra, p.ConfigFile())
	// Only another key: fine, and the file keeps the directory.
	if _, err := live.Patch(map[string]json.RawMessage{"server_debug_max_files": json.RawMessage(`10`)}); err != nil {
		t.Fatalf("PATCH of another key alone: %v", err)
	}
	b, _ := os.ReadFile(p.ConfigFile())
	if !strings.Contains(string(b), `/var/log/beaconhub`) {
		t.Fatalf("write-back lost the directory: %s", b)
	}
	// The group as shown, one value changed.
	_, err = live.Patch(map[string]json.RawMessage{
		"server_debug_log_dir":   json.RawMessage(`"/var/log/beaconhub"`),
		"server_debug_max_files": json.RawMessage(`20`),
	})
	if err != nil {
		t.Fatalf("PATCH sending the kept directory back unchanged: %v", err)
	}
}
