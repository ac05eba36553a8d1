package bridge

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Reply is Zabbix's answer to a sender request.
type Reply struct {
	Response  string // "success" or "failed"
	Info      string // raw info line, for the logs
	Processed int
	Failed    int
	Total     int
	Seconds   float64
}

// ErrRejected is a reply whose response is not "success": Zabbix refused
// the request as a whole (malformed, or the sender is not allowed).
var ErrRejected = errors.New("zabbix rejected the request")

// DecodeReply parses the JSON of a reply frame:
//
//	{"response":"success","info":"processed: 2; failed: 1; total: 3; seconds spent: 0.000055"}
//
// An info line it cannot read is an error, because the counts are how a
// failed value becomes visible.
func DecodeReply(data []byte) (Reply, error) {
	var raw struct {
		Response string `json:"response"`
		Info     string `json:"info"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return Reply{}, fmt.Errorf("zabbix reply: %w", err)
	}
	r := Reply{Response: raw.Response, Info: raw.Info}
	if raw.Response != "success" {
		if raw.Response == "" {
			return r, errors.New("zabbix reply: no response field")
		}
		return r, fmt.Errorf("%w: %s %q", ErrRejected, raw.Response, raw.Info)
	}
	if err := r.parseInfo(); err != nil {
		return r, err
	}
	return r, nil
}

// parseInfo reads "processed: N; failed: M; total: T; seconds spent: S".
// Fields are matched by name so an added field does not break the parse;
// the three counts are required and must add up.
func (r *Reply) parseInfo() error {
	seen := 0 // bit per count, so a repeated field cannot stand in for a missing one
	for part := range strings.SplitSeq(r.Info, ";") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), ":")
		if !ok {
			return fmt.Errorf("zabbix reply: info %q", r.Info)
		}
		val = strings.TrimSpace(val)
		var dst *int
		var bit int
		switch strings.TrimSpace(name) {
		case "processed":
			dst, bit = &r.Processed, 1
		case "failed":
			dst, bit = &r.Failed, 2
		case "total":
			dst, bit = &r.Total, 4
		case "seconds spent":
			f, err := strconv.ParseFloat(val, 64)
			if err != nil {
				return fmt.Errorf("zabbix reply: info %q", r.Info)
			}
			r.Seconds = f
			continue
		default:
			continue
		}
		n, err := strconv.Atoi(val)
		if err != nil || n < 0 {
			return fmt.Errorf("zabbix reply: info %q", r.Info)
		}
		*dst = n
		seen |= bit
	}
	if seen != 7 || r.Processed+r.Failed != r.Total {
		return fmt.Errorf("zabbix reply: info %q", r.Info)
	}
	return nil
}
