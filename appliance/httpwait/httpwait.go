// Package httpwait reads what an HTTP server asks a client to wait: one
// Retry-After parser for every peer that answers 429 or 503 (the push
// server, its status probe, alertsys), below the packages that talk to
// them so none has to import another for it.
package httpwait

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter is the pause a Retry-After header asks for: delay-seconds
// or an HTTP date (RFC 9110 10.2.3), not below 0; false when it says
// neither. Callers bound it: the server's word is not taken blindly.
func RetryAfter(h string, now time.Time) (time.Duration, bool) {
	h = strings.TrimSpace(h)
	if s, err := strconv.ParseInt(h, 10, 64); err == nil && s >= 0 {
		return time.Duration(min(s, int64(math.MaxInt64/time.Second))) * time.Second, true
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}
