package push

import (
	"encoding/json"
	"errors"
	"strings"
)

// RecordPrefix starts the alert data v1 line. The record is always the
// last line of a message: RecordPrefix followed by one line of compact
// JSON whose keys appear in the fixed order of Record's fields (Go's
// encoder keeps struct order and escapes no newline), so the same event
// always renders to the same bytes and the app can parse it with
// "take the last line, strip the prefix, JSON-decode".
const RecordPrefix = "alert-data-v1: "

// Kinds and intents of a record.
const (
	KindMoment    = "moment"    // SOS, watch and test: single moments
	KindCondition = "condition" // everything else: active/resolved

	PhaseMoment   = "moment"
	PhaseActive   = "active"
	PhaseResolved = "resolved"
	PhaseSnapshot = "snapshot" // digest or current-state snapshot

	IntentAlert    = "alert"    // staff should act
	IntentState    = "state"    // quiet state update (recovery)
	IntentDigest   = "digest"   // scheduled digest
	IntentSnapshot = "snapshot" // silent current state (QR minting)
	IntentTest     = "test"
)

// Item is one condition listed in a digest or snapshot.
type Item struct {
	Subject string `json:"subject"`
	Phase   string `json:"phase"`
	Since   int64  `json:"since,omitempty"`
	At      int64  `json:"at"`
	Text    string `json:"text"`
}

// Record is the alert data v1 machine record.
type Record struct {
	V        int    `json:"v"` // always 1
	Category string `json:"category"`
	Kind     string `json:"kind"`
	Phase    string `json:"phase"`
	Intent   string `json:"intent"`
	Subject  string `json:"subject"` // stable: condition key or "event:<id>"
	Device   Device `json:"device"`
	At       int64  `json:"at"`  // Unix ms of the moment or transition
	Seq      uint64 `json:"seq"` // publisher sequence, increasing per process state
	Part     int    `json:"part,omitempty"`
	Parts    int    `json:"parts,omitempty"`
	Items    []Item `json:"items,omitempty"`
}

// Text renders the record line.
func (r Record) Text() string {
	r.V = 1
	b, _ := json.Marshal(r)
	return RecordPrefix + string(b)
}

// ParseRecord extracts the record from a message; legacy messages
// without one return an error and cannot claim current state.
func ParseRecord(message string) (Record, error) {
	i := strings.LastIndex(message, "\n"+RecordPrefix)
	if i < 0 {
		if !strings.HasPrefix(message, RecordPrefix) {
			return Record{}, errors.New("no alert data v1 record")
		}
		i = -1
	}
	var r Record
	err := json.Unmarshal([]byte(message[i+1+len(RecordPrefix):]), &r)
	if err == nil && r.V != 1 {
		err = errors.New("unsupported alert data version")
	}
	return r, err
}
