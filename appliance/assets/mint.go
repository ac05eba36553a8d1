package assets

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// asset_uid scheme
//
//	beacon   TYPE-LOCATIONPATH-SEQ   e.g. SEN-H1W2F3-7
//	gateway  GW-LOCATIONPATH-SEQ
//	e-ink    EK-LOCATIONPATH-SEQ
//	legacy   LEGACY-<MAC>            type unknown or no home location yet
//
// LOCATIONPATH is the codes of the locations from the root down to the
// home location, concatenated. SEQ counts per (prefix, path) from 1 and is
// never handed out twice, even after the asset is deleted or the codes
// change, so a uid seen in an old export always meant one asset.

// Beacon types and their uid prefixes.
var typePrefix = map[string]string{
	"watch":      "WCH",
	"panic":      "PAN",
	"navigation": "NAV",
	"sos":        "SOS",
	"sensor":     "SEN",
}

// TypeUnknown is the type of imported and legacy beacons.
const TypeUnknown = "unknown"

// Prefixes of non-beacon assets.
const (
	PrefixGateway = "GW"
	PrefixEInk    = "EK"
)

// maxCodeLen is the spec's limit on a location code.
const maxCodeLen = 12

// ValidType reports whether t is a beacon type.
func ValidType(t string) bool {
	_, ok := typePrefix[t]
	return ok || t == TypeUnknown
}

// TypePrefix returns the uid prefix of a beacon type ("" for unknown).
func TypePrefix(beaconType string) string { return typePrefix[beaconType] }

// IsLegacy reports whether uid is a LEGACY- uid (to be reminted).
func IsLegacy(uid string) bool { return strings.HasPrefix(uid, store.LegacyPrefix) }

// validCode reports whether c is 1-12 ASCII letters or digits.
func validCode(c string) bool {
	if len(c) == 0 || len(c) > maxCodeLen {
		return false
	}
	for i := 0; i < len(c); i++ {
		ch := c[i]
		if !(ch >= '0' && ch <= '9' || ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z') {
			return false
		}
	}
	return true
}

// codePath returns the concatenated codes from the root to locationID, or
// a 400 naming the first location on the way that has no code. field is
// the request field the location came from.
func codePath(t *store.AssetTx, locationID uint64, field string) (string, error) {
	path, err := t.LocationPath(locationID)
	if errors.Is(err, store.ErrNotFound) {
		return "", apperr.InvalidField(field, "location %d does not exist", locationID)
	}
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, l := range path {
		if l.Code == "" {
			return "", apperr.InvalidField(field, "location %q (id %d) has no code: every location from the root to the home location needs one before an asset_uid can be minted", l.Name, l.ID)
		}
		b.WriteString(l.Code)
	}
	return b.String(), nil
}

// mintable reports whether the location path is fully coded, without an
// error for the client (remint planning).
func mintable(t *store.AssetTx, locationID uint64) (string, string) {
	if locationID == 0 {
		return "", "no home location"
	}
	p, err := codePath(t, locationID, "location_id")
	if err != nil {
		if e, ok := apperr.As(err); ok {
			return "", e.Msg
		}
		return "", err.Error()
	}
	return p, ""
}

func seqKey(prefix, path string) string { return prefix + "|" + path }

func formatUID(prefix, path string, seq uint64) string {
	return prefix + "-" + path + "-" + strconv.FormatUint(seq, 10)
}

// Mint hands out the next uid PREFIX-LOCATIONPATH-SEQ for an asset homed
// at locationID and claims it for ref, inside the caller's transaction (so
// a failed request hands nothing out). It fails with a 400 naming the
// location when the path is not fully coded. The e-ink registry mints with
// PrefixEInk.
func Mint(t *store.AssetTx, prefix string, locationID uint64, ref store.AssetRef) (string, error) {
	if locationID == 0 {
		return "", apperr.InvalidField("location_id", "a home location with a fully coded path is needed to mint an asset_uid")
	}
	path, err := codePath(t, locationID, "location_id")
	if err != nil {
		return "", err
	}
	if len(formatUID(prefix, path, 1<<63)) > store.MaxUIDLen {
		return "", apperr.InvalidField("location_id", "location path %q is too long to mint an asset_uid (at most %d characters in all)", path, store.MaxUIDLen)
	}
	for {
		seq, err := t.NextUIDSeq(seqKey(prefix, path))
		if err != nil {
			return "", err
		}
		uid := formatUID(prefix, path, seq)
		err = t.ClaimUID(uid, ref)
		if errors.Is(err, store.ErrDuplicate) {
			continue // taken by a uid given explicitly (tests, tools): skip the number
		}
		if err != nil {
			return "", fmt.Errorf("claim %s: %w", uid, err)
		}
		return uid, nil
	}
}

// predictUIDs simulates Mint for a remint plan: the numbers apply will
// hand out, in the same order, without claiming anything.
type predictUIDs struct {
	t    *store.AssetTx
	next map[string]uint64
}

func (p *predictUIDs) mint(prefix, path string) string {
	k := seqKey(prefix, path)
	n, ok := p.next[k]
	if !ok {
		n = p.t.PeekUIDSeq(k)
	}
	for {
		n++
		uid := formatUID(prefix, path, n)
		if !p.t.UIDTaken(uid) {
			p.next[k] = n
			return uid
		}
	}
}
