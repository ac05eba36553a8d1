package bridge

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Asset is one row of a main-server discovery list.
type Asset struct {
	UID  string `json:"{#ASSET_UID}"`
	MAC  string `json:"{#MAC}"`
	Name string `json:"{#NAME}"`
	// Current values the main server puts next to the macros (absent:
	// unknown); sent as item values, never as discovery data.
	Type        string   `json:"type,omitempty"`
	LastSeen    int64    `json:"last_seen,omitempty"` // Unix ms
	Temperature *float64 `json:"temperature,omitempty"`
	Humidity    *float64 `json:"humidity,omitempty"`
	BatteryMV   *int64   `json:"battery_mv,omitempty"`
	// Gone: discovered, but no longer in the main server's list (deleted,
	// merged away, deactivated); only online = 0 is sent for it.
	Gone bool `json:"-"`
}

// maxListBody bounds a discovery list: 10,000 assets are about 1 MiB.
const maxListBody = 16 << 20

// Source fetches the discovery lists from the main server (possibly on
// another box). The lists need no credentials (spec: /lld/*).
type Source struct {
	Base   *url.URL
	Client *http.Client // carries the timeout
}

// NewSource parses the main server's base URL.
func NewSource(base string, client *http.Client) (*Source, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("bridge: main server URL must be http(s)://host[:port]/")
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return &Source{Base: u, Client: client}, nil
}

// URL is where endpoint (relative, e.g. "lld/beacons") is fetched from.
func (s *Source) URL(endpoint string) string {
	return s.Base.ResolveReference(&url.URL{Path: strings.TrimLeft(endpoint, "/")}).String()
}

// Fetch returns the list at endpoint. A truncated or malformed answer is
// an error as a whole: the caller keeps its previous list rather than
// make half the fleet vanish from the monitoring server. Rows whose uid
// cannot be used in an item key are dropped and counted in skipped.
func (s *Source) Fetch(ctx context.Context, endpoint string) (assets []Asset, skipped int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL(endpoint), nil)
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.Client.Do(req)
	if err != nil {
		return nil, 0, fmt.Errorf("fetch %s: %w", endpoint, unwrapURLError(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, 0, fmt.Errorf("fetch %s: HTTP %d", endpoint, resp.StatusCode)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxListBody+1))
	if err != nil {
		return nil, 0, fmt.Errorf("fetch %s: %w", endpoint, err)
	}
	if len(body) > maxListBody {
		return nil, 0, fmt.Errorf("fetch %s: list over %d bytes", endpoint, maxListBody)
	}
	var list struct {
		Data *[]Asset `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, 0, fmt.Errorf("fetch %s: malformed list: %w", endpoint, err)
	}
	if list.Data == nil {
		return nil, 0, fmt.Errorf("fetch %s: list has no data array", endpoint)
	}
	out := (*list.Data)[:0]
	for _, a := range *list.Data {
		if !keyParamOK(a.UID) {
			skipped++
			continue
		}
		a.MAC = strings.ToUpper(a.MAC)
		out = append(out, a)
	}
	return out, skipped, nil
}

// keyParamOK accepts the characters asset uids are minted from. Item
// prototypes put {#ASSET_UID} unquoted into the key, so anything else
// (comma, bracket, quote) would make a different key than the one sent.
func keyParamOK(uid string) bool {
	if uid == "" || len(uid) > 128 {
		return false
	}
	for i := 0; i < len(uid); i++ {
		c := uid[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// unwrapURLError drops the *url.Error wrapper, whose text repeats the
// full URL (and with it any credentials a user put there).
func unwrapURLError(err error) error {
	if ue, ok := err.(*url.Error); ok {
		return ue.Err
	}
	return err
}
