package main

import (
	"fmt"
	"io"
	"os"

	"beaconhub/store"
)

// auditNotMade is audit's exit code when it could not look.
const auditNotMade = 3

// cmdAudit is the spec's post-upgrade audit: it lists every uid-keyed
// record (sensor history, last-seen times, events, button-press audit...)
// whose key is a device MAC instead of an asset_uid, and exits 1 when there
// is one. Opening the database applies pending migrations first, so on an
// old database it audits the result of the 8.0 upgrade.
//
// Exit codes: 0 clean, 1 findings, 2 usage, 3 no audit was made (bad
// configuration, no database, the service holding it). A script upgrading
// a box must not read "the service is still running" as "records left to
// remint": both were 1.
func cmdAudit(args []string, stdout, stderr io.Writer) int {
	paths, cfg, _, _, code := homeCommand("audit", args, stderr, true)
	if cfg == nil {
		if code == 1 {
			return auditNotMade
		}
		return code
	}
	file := paths.DBFile(cfg)
	if _, err := os.Stat(file); err != nil {
		fmt.Fprintf(stderr, "no database at %s: %v\n", file, err)
		return auditNotMade
	}
	db, err := store.Open(file, store.OpenOptions{})
	if err != nil {
		fmt.Fprintf(stderr, "%v\n", err)
		return auditNotMade
	}
	defer db.Close()
	if from, to, moved := db.Migrated(); moved {
		// Opening migrates, as serve would; said, since an older binary
		// no longer opens the file (an upgrade check ran audit as a
		// read-only look before upgrading).
		fmt.Fprintf(stdout, "note: the database was migrated from schema %d to %d, as serve would; an older binary no longer opens it\n", from, to)
	}
	findings, err := db.AuditMACKeys()
	if err != nil {
		fmt.Fprintf(stderr, "audit failed: %v\n", err)
		return auditNotMade
	}
	if len(findings) == 0 {
		fmt.Fprintf(stdout, "ok: no uid-keyed record is keyed by a MAC in %s\n", file)
		return 0
	}
	for _, f := range findings {
		fmt.Fprintf(stdout, "%s\t%s\t%d records\n", f.Bucket, f.Key, f.Count)
	}
	fmt.Fprintf(stdout, "%d keys are MACs; POST /api/v1/assets/remint/apply adopts them (each moves to the asset holding the device, or to a new LEGACY-<MAC> beacon)\n", len(findings))
	return 1
}
