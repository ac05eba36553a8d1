package alerting

// The alertsys wire format is ours to choose (the spec names only the
// paths); it is documented in docs/alertsys.md and spoken by alertsystest.

// LoginRequest is POSTed to base + server_alertsys_url_path_login.
type LoginRequest struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// LoginResponse is the answer to a login: a bearer token and its lifetime.
type LoginResponse struct {
	Token     string `json:"token"`
	ExpiresIn int    `json:"expires_in"` // seconds; 0 or absent: DefaultTokenTTL
}

// ConveneRequest is POSTed to base + server_alertsys_url_path_convene with
// the token, once per SOS or watch press event.
type ConveneRequest struct {
	Rule       string       `json:"rule"` // "sos" (panic beacon) or "watch"
	EventID    uint64       `json:"event_id"`
	ServerID   string       `json:"server_id"`
	Press      string       `json:"press"`
	OccurredAt int64        `json:"occurred_at"` // Unix ms, server receive time of the first report
	Asset      ConveneAsset `json:"asset"`
	Location   ConvenePlace `json:"location"`
	HeardBy    ConveneHeard `json:"heard_by"`
}

// ConveneAsset identifies the beacon.
type ConveneAsset struct {
	AssetUID string `json:"asset_uid"`
	Name     string `json:"name"`
	Type     string `json:"type"`
	MAC      string `json:"mac"`
}

// ConvenePlace is the beacon's home location. Every key is always sent
// (docs/alertsys.md: what the registry does not know is empty, the id
// null), so a parser need not tell a missing key from an unknown value:
// they were left out, against the doc (a black-box check).
type ConvenePlace struct {
	ID   *uint64 `json:"id"`
	Name string  `json:"name"`
}

// PlaceOf is the ConvenePlace of location id (0: none) named name.
func PlaceOf(id uint64, name string) ConvenePlace {
	if id == 0 {
		return ConvenePlace{Name: name}
	}
	return ConvenePlace{ID: &id, Name: name}
}

// ConveneHeard is the gateway that reported the press first.
type ConveneHeard struct {
	Gateway  string `json:"gateway"`
	AssetUID string `json:"asset_uid"`
	Name     string `json:"name"`
	Location string `json:"location"`
}

// ConveneResponse is alertsys' answer; Message is the text the push
// notification may use as its title.
type ConveneResponse struct {
	OK        bool   `json:"ok"`
	ConveneID string `json:"convene_id"`
	Message   string `json:"message"`
}
