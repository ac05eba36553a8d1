package handlers

import (
	"hash/crc32"
	"net/http"
	"strconv"
	"strings"
)

// Conditional GET for answers built in the handler (the navigation
// project and fingerprint model); files and images go through
// http.ServeContent, which applies the same rules itself.

// notModified answers 304 and reports true when r's If-None-Match matches
// etag. Call it after setting every header the 200 would carry that a 304
// must repeat (ETag, Vary, Cache-Control: RFC 9110 §15.4.5).
func notModified(w http.ResponseWriter, r *http.Request, etag string) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	if !etagMatches(r.Header.Get("If-None-Match"), etag) {
		return false
	}
	w.WriteHeader(http.StatusNotModified)
	return true
}

// etagMatches applies If-None-Match (RFC 9110 §13.1.2): "*", or a
// comma-separated list of entity tags compared weakly (W/"x" matches
// "x"). A bare, unquoted value equal to the tag's opaque part also
// matches: clients send the catalog's sha as it is, and always have.
// Parsing stops at the first malformed element.
func etagMatches(header, etag string) bool {
	want := strings.TrimPrefix(etag, "W/")
	bare := strings.Trim(want, `"`)
	h := strings.TrimSpace(header)
	if h == "*" {
		return true
	}
	if h == bare && bare != "" {
		return true
	}
	for {
		h = strings.TrimLeft(h, " \t,")
		if h == "" {
			return false
		}
		h = strings.TrimPrefix(h, "W/")
		if len(h) < 2 || h[0] != '"' {
			return false
		}
		end := strings.IndexByte(h[1:], '"')
		if end < 0 {
			return false
		}
		if h[:end+2] == want {
			return true
		}
		h = h[end+2:]
		if rest := strings.TrimLeft(h, " \t"); rest != "" && rest[0] != ',' {
			return false
		}
	}
}

// castagnoli is the CRC of bytesETag: hardware accelerated, so tagging a
// file at every request costs next to nothing.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// bytesETag is the strong ETag of a body served whole from memory (the
// embedded frontend, a floor plan): its length and CRC-32C. Versions of
// one file are what it tells apart, so a CRC is enough.
func bytesETag(data []byte) string {
	return `"` + strconv.Itoa(len(data)) + "-" + strconv.FormatUint(uint64(crc32.Checksum(data, castagnoli)), 16) + `"`
}
