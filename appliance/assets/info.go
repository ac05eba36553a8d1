package assets

import (
	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// AssignmentView is one device assignment as the API shows it.
type AssignmentView struct {
	store.Assignment
	AssetUID string `json:"asset_uid"`
	Open     bool   `json:"open"`
}

// AssetInfo is the detail page of an asset.
type AssetInfo struct {
	Kind        string           `json:"kind"`
	Asset       any              `json:"asset"`
	Device      *DeviceView      `json:"device"`
	Assignments []AssignmentView `json:"assignments"`
	LastSeen    int64            `json:"last_seen"`
	Records     map[string]int   `json:"records"` // uid-keyed records per bucket
}

// AssetByUID returns the kind and view of any asset (following renames).
func (s *Service) AssetByUID(uid string) (string, any, error) {
	var kind string
	var v any
	err := s.view(func(t *store.AssetTx) error {
		ref, err := refOfKind(t, "", uid)
		if err != nil {
			return err
		}
		kind, v, err = assetView(t, ref, s.now())
		return err
	})
	return kind, v, err
}

// AssetHome is an asset's kind and home location (0: none).
type AssetHome struct {
	Kind string
	Home uint64
}

// HomesOf returns the kind and home of each uid that names an asset now,
// current or former; a uid that names none (a user, the configuration, a
// deleted asset) is absent. One read transaction for the lot: the app log
// filters a page by it.
func (s *Service) HomesOf(uids []string) (map[string]AssetHome, error) {
	out := map[string]AssetHome{}
	err := s.view(func(t *store.AssetTx) error {
		for _, uid := range uids {
			ref, ok := resolve(t, uid)
			if !ok {
				continue
			}
			switch ref.Kind {
			case store.KindBeacon:
				if b, err := t.Beacon(ref.ID); err == nil {
					out[uid] = AssetHome{ref.Kind, b.LocationID}
				}
			case store.KindGateway:
				if g, err := t.Gateway(ref.ID); err == nil {
					out[uid] = AssetHome{ref.Kind, g.LocationID}
				}
			case store.KindEInk:
				if d, err := t.EInk(ref.ID); err == nil {
					out[uid] = AssetHome{ref.Kind, d.LocationID}
				}
			}
		}
		return nil
	})
	return out, err
}

// CurrentUID resolves uid, current or former (remint, merge), of an
// asset of any kind, e-ink displays included, to its current uid.
func (s *Service) CurrentUID(uid string) (string, error) {
	var cur string
	err := s.view(func(t *store.AssetTx) error {
		ref, err := refOfKind(t, "", uid)
		if err != nil {
			return err
		}
		cur, err = t.UIDOf(ref)
		return err
	})
	return cur, err
}

func assetView(t *store.AssetTx, ref store.AssetRef, now int64) (string, any, error) {
	switch ref.Kind {
	case store.KindBeacon:
		b, err := t.Beacon(ref.ID)
		if err != nil {
			return "", nil, err
		}
		return ref.Kind, beaconView(t, b, now), nil
	case store.KindGateway:
		g, err := t.Gateway(ref.ID)
		if err != nil {
			return "", nil, err
		}
		return ref.Kind, gatewayView(g), nil
	}
	return "", nil, apperr.NotFound("asset kind %s is not served here", ref.Kind)
}

// Info returns an asset with its device, device history, last-seen time
// and record counts. kind "" accepts any kind.
func (s *Service) Info(kind, uid string) (AssetInfo, error) {
	var out AssetInfo
	err := s.view(func(t *store.AssetTx) error {
		now := s.now()
		ref, err := refOfKind(t, kind, uid)
		if err != nil {
			return err
		}
		if out.Kind, out.Asset, err = assetView(t, ref, now); err != nil {
			return err
		}
		rec, err := loadAsset(t, ref)
		if err != nil {
			return err
		}
		if mac := rec.mac(); mac != "" {
			if d, err := t.Device(mac); err == nil {
				v := deviceView(t, d, now)
				out.Device = &v
			}
		}
		if out.Assignments, err = assignmentViews(t, ref); err != nil {
			return err
		}
		if out.Records, err = t.CountUID(rec.uid()); err != nil {
			return err
		}
		out.LastSeen = s.lastSeen(t, ref, rec)
		return nil
	})
	return out, err
}

// lastSeen prefers the pipeline's live value; the store holds the last
// flush.
func (s *Service) lastSeen(t *store.AssetTx, ref store.AssetRef, rec *assetRec) int64 {
	if ref.Kind == store.KindGateway {
		if rec.mac() == "" {
			return 0
		}
		return t.LastSeenAt("gw:" + rec.mac())
	}
	if l := s.hooks.LastSeen; l != nil {
		if ts := l.Asset(rec.uid()); ts != 0 {
			return ts
		}
	}
	return t.LastSeenAt(rec.uid())
}

func assignmentViews(t *store.AssetTx, ref store.AssetRef) ([]AssignmentView, error) {
	as, err := t.AssignmentsOf(ref)
	if err != nil {
		return nil, err
	}
	uid, _ := t.UIDOf(ref)
	out := make([]AssignmentView, 0, len(as))
	for _, a := range as {
		out = append(out, AssignmentView{Assignment: a, AssetUID: uid, Open: a.Open()})
	}
	return out, nil
}

// Assignments returns the device history of the asset uid of kind.
func (s *Service) Assignments(kind, uid string) ([]AssignmentView, error) {
	var out []AssignmentView
	err := s.view(func(t *store.AssetTx) error {
		ref, err := refOfKind(t, kind, uid)
		if err != nil {
			return err
		}
		out, err = assignmentViews(t, ref)
		return err
	})
	return out, err
}

// LLDItem is one entry of a monitoring-server low-level-discovery list.
// The {#...} keys are the discovery macros; the plain keys are current
// values the monitoring bridge sends as item values (Zabbix ignores keys
// that are not macros). Omitted when unknown.
type LLDItem struct {
	UID      string `json:"{#ASSET_UID}"`
	MAC      string `json:"{#MAC}"`
	Name     string `json:"{#NAME}"`
	Type     string `json:"type,omitempty"`      // beacons
	LastSeen int64  `json:"last_seen,omitempty"` // Unix ms of the last radio sighting
	// Latest sensor values (beacons; filled by the HTTP layer, which holds
	// the sensor recorder).
	Temperature *float64 `json:"temperature,omitempty"`
	Humidity    *float64 `json:"humidity,omitempty"`
	BatteryMV   *int64   `json:"battery_mv,omitempty"`
}

// LLD lists the active assets of kind (beacon or gateway) with their
// current device and last sighting.
func (s *Service) LLD(kind string) ([]LLDItem, error) {
	out := []LLDItem{}
	err := s.view(func(t *store.AssetTx) error {
		if kind == store.KindGateway {
			return t.EachGateway(func(g *store.Gateway) error {
				if gatewayStatus(g) == store.AssetActive {
					seen := s.lastSeen(t, store.AssetRef{Kind: store.KindGateway, ID: g.ID}, &assetRec{g: g})
					out = append(out, LLDItem{UID: g.AssetUID, MAC: g.MAC, Name: g.Name, LastSeen: seen})
				}
				return nil
			})
		}
		return t.EachBeacon(func(b *store.Beacon) error {
			if b.Active {
				seen := s.lastSeen(t, store.AssetRef{Kind: store.KindBeacon, ID: b.ID}, &assetRec{b: b})
				out = append(out, LLDItem{UID: b.AssetUID, MAC: b.MAC, Name: b.Name, Type: b.Type, LastSeen: seen})
			}
			return nil
		})
	})
	return out, err
}
