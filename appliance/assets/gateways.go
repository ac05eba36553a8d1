package assets

import (
	"net/netip"
	"strings"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// GatewayView is a gateway as the API shows it.
type GatewayView struct {
	ID         uint64 `json:"id"`
	AssetUID   string `json:"asset_uid"`
	MAC        string `json:"mac"`
	Name       string `json:"name"`
	IP         string `json:"ip"`
	LocationID uint64 `json:"location_id"`
	Status     string `json:"status"`
	CreatedAt  int64  `json:"created_at"`
	UpdatedAt  int64  `json:"updated_at"`
}

func gatewayStatus(g *store.Gateway) string {
	if g.Status == "" {
		return store.AssetActive
	}
	return g.Status
}

func gatewayView(g *store.Gateway) GatewayView {
	return GatewayView{ID: g.ID, AssetUID: g.AssetUID, MAC: g.MAC, Name: g.Name, IP: g.IP, LocationID: g.LocationID,
		Status: gatewayStatus(g), CreatedAt: g.CreatedAt.UnixMilli(), UpdatedAt: g.UpdatedAt.UnixMilli()}
}

func gatewayByUID(t *store.AssetTx, uid string) (*store.Gateway, error) {
	ref, ok := resolve(t, uid)
	if !ok || ref.Kind != store.KindGateway {
		return nil, apperr.NotFound("gateway %s not found", uid)
	}
	return t.Gateway(ref.ID)
}

// Gateways lists every gateway.
func (s *Service) Gateways() ([]GatewayView, error) {
	out := []GatewayView{}
	err := s.view(func(t *store.AssetTx) error {
		return t.EachGateway(func(g *store.Gateway) error { out = append(out, gatewayView(g)); return nil })
	})
	return out, err
}

// GatewaySpell is a device's time on one gateway (its device history):
// [From, To), To 0 while it is still there.
type GatewaySpell struct {
	ID        uint64 // the assignment's: later ones are larger
	MAC       string
	GatewayID uint64
	From, To  int64
}

// GatewaySpells lists every device's spells on gateways, in no order.
func (s *Service) GatewaySpells() ([]GatewaySpell, error) {
	var out []GatewaySpell
	err := s.view(func(t *store.AssetTx) error {
		return t.EachAssignmentOfKind(store.KindGateway, func(a *store.Assignment) error {
			out = append(out, GatewaySpell{ID: a.ID, MAC: a.MAC, GatewayID: a.GatewayID, From: a.From, To: a.To})
			return nil
		})
	})
	return out, err
}

// Gateway returns one gateway by uid.
func (s *Service) Gateway(uid string) (GatewayView, error) {
	var v GatewayView
	err := s.view(func(t *store.AssetTx) error {
		g, err := gatewayByUID(t, uid)
		if err == nil {
			v = gatewayView(g)
		}
		return err
	})
	return v, err
}

func applyGateway(t *store.AssetTx, g *store.Gateway, in *GatewayInput) error {
	if in.Name != nil {
		n, err := cleanName(in.Name)
		if err != nil {
			return err
		}
		g.Name = n
	}
	if in.IP != nil {
		ip := strings.TrimSpace(*in.IP)
		if ip != "" {
			if _, err := netip.ParseAddr(ip); err != nil {
				return apperr.InvalidField("ip", "ip must be an IPv4 or IPv6 address, got %q", *in.IP)
			}
		}
		g.IP = ip
	}
	if in.LocationID != nil {
		if err := checkLocation(t, "location_id", *in.LocationID); err != nil {
			return err
		}
		g.LocationID = *in.LocationID
	}
	return nil
}

// CreateGateway registers a gateway: GW-LOCATIONPATH-SEQ with a location,
// LEGACY-<MAC> without.
func (s *Service) CreateGateway(in GatewayInput) (GatewayView, error) {
	if in.MAC == nil {
		return GatewayView{}, apperr.InvalidField("mac", "mac is required")
	}
	mac, err := parseMAC("mac", *in.MAC)
	if err != nil {
		return GatewayView{}, err
	}
	if in.Name == nil {
		return GatewayView{}, apperr.InvalidField("name", "name is required")
	}
	if in.AssetUID != nil {
		return GatewayView{}, apperr.InvalidField("asset_uid", "asset_uid is minted by the server, not chosen")
	}
	var v GatewayView
	err = s.write(func(t *store.AssetTx, fx *effects) error {
		g := &store.Gateway{MAC: mac, Status: store.AssetActive}
		if err := applyGateway(t, g, &in); err != nil {
			return err
		}
		if err := t.PutGateway(g); err != nil {
			return err
		}
		ref := store.AssetRef{Kind: store.KindGateway, ID: g.ID}
		if g.LocationID != 0 {
			uid, err := Mint(t, PrefixGateway, g.LocationID, ref)
			if err != nil {
				return err
			}
			g.AssetUID = uid
		} else {
			g.AssetUID = t.UniqueLegacyUID(mac)
			if err := t.ClaimUID(g.AssetUID, ref); err != nil {
				return err
			}
		}
		if err := attachNew(t, mac, store.KindGateway, ref, nil, nil, "created"); err != nil {
			return err
		}
		if err := t.PutGateway(g); err != nil {
			return err
		}
		fx.forget = append(fx.forget, store.DiscoveredDevice{MAC: mac, IsGateway: true})
		v = gatewayView(g)
		return nil
	})
	return v, err
}

// UpdateGateway edits a gateway; a LEGACY- gateway given a coded location
// is reminted. The MAC changes only through replace-device.
func (s *Service) UpdateGateway(uid string, in GatewayInput) (GatewayView, error) {
	var v GatewayView
	err := s.write(func(t *store.AssetTx, fx *effects) error {
		g, err := gatewayByUID(t, uid)
		if err != nil {
			return err
		}
		if in.MAC != nil {
			if mac, ok := store.NormalizeMAC(*in.MAC); !ok || mac != g.MAC {
				return apperr.InvalidField("mac", "mac cannot be changed here; use replace-device")
			}
		}
		if in.AssetUID != nil && *in.AssetUID != g.AssetUID {
			return apperr.InvalidField("asset_uid", "asset_uid cannot be changed; it is reminted automatically")
		}
		if err := applyGateway(t, g, &in); err != nil {
			return err
		}
		if gatewayStatus(g) == store.AssetActive && IsLegacy(g.AssetUID) && g.LocationID != 0 {
			uid, err := Mint(t, PrefixGateway, g.LocationID, store.AssetRef{Kind: store.KindGateway, ID: g.ID})
			if err != nil {
				return err
			}
			if err := renameAsset(t, g.AssetUID, uid, fx); err != nil {
				return err
			}
			g.AssetUID = uid
		}
		if err := t.PutGateway(g); err != nil {
			return err
		}
		v = gatewayView(g)
		return nil
	})
	return v, err
}

// DeleteGateway removes a gateway; its device becomes available.
func (s *Service) DeleteGateway(uid string) (GatewayView, error) {
	var v GatewayView
	err := s.write(func(t *store.AssetTx, _ *effects) error {
		g, err := gatewayByUID(t, uid)
		if err != nil {
			return err
		}
		v = gatewayView(g)
		if g.MAC != "" {
			if err := t.Detach(g.MAC, t.Now, "deleted", store.DeviceAvailable); err != nil {
				return err
			}
		}
		if err := t.ReleaseUID(g.AssetUID); err != nil {
			return err
		}
		return t.DeleteGateway(g.ID)
	})
	return v, err
}
