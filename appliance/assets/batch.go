package assets

import (
	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// MaxBatchReplace is the spec's limit on one batch replace.
const MaxBatchReplace = 200

// BatchItem is one replacement of a batch: the target asset (a beacon or
// a gateway) and the replace body. Batch replaces take effect now only.
type BatchItem struct {
	AssetUID string `json:"asset_uid"`
	ReplaceInput
}

// BatchInput is the body of POST /api/v1/assets/replace-device/batch.
type BatchInput struct {
	Replacements []BatchItem `json:"replacements"`
}

// BatchItemResult is the outcome of one replacement.
type BatchItemResult struct {
	Index    int          `json:"index"`
	AssetUID string       `json:"asset_uid"`
	MAC      string       `json:"mac"`
	OK       bool         `json:"ok"`
	Status   int          `json:"status"` // the HTTP status this item alone would have had
	Error    string       `json:"error,omitempty"`
	Field    string       `json:"field,omitempty"`
	Result   *ReplacePlan `json:"result,omitempty"`
}

// BatchResult is the outcome of a batch: partial success is normal.
type BatchResult struct {
	Succeeded int               `json:"succeeded"`
	Failed    int               `json:"failed"`
	Results   []BatchItemResult `json:"results"`
}

var kindStatus = map[apperr.Kind]int{apperr.KindInvalid: 400, apperr.KindNotFound: 404, apperr.KindConflict: 409}

// ReplaceBatch runs each replacement in its own transaction, in order, so
// one bad row fails alone and a later row sees the earlier ones done. The
// cache is reloaded once, before it returns.
func (s *Service) ReplaceBatch(in BatchInput) (BatchResult, error) {
	switch n := len(in.Replacements); {
	case n == 0:
		return BatchResult{}, apperr.InvalidField("replacements", "replacements must hold 1 to %d items", MaxBatchReplace)
	case n > MaxBatchReplace:
		return BatchResult{}, apperr.InvalidField("replacements", "at most %d replacements per call, got %d", MaxBatchReplace, n)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	res := BatchResult{Results: make([]BatchItemResult, 0, len(in.Replacements))}
	fx := &effects{}
	for i, it := range in.Replacements {
		r := BatchItemResult{Index: i, AssetUID: it.AssetUID, MAC: it.MAC, OK: true, Status: 200}
		var plan ReplacePlan
		err := s.db.UpdateAssets(s.clock.Now(), func(t *store.AssetTx) error {
			ref, err := refOfKind(t, "", it.AssetUID)
			if err != nil {
				return err
			}
			p, err := planReplace(t, ref, it.ReplaceInput, scope{nowOnly: "batch"})
			if err != nil {
				return err
			}
			if err := p.apply(t); err != nil {
				return err
			}
			plan = p.ReplacePlan
			fx.forget = append(fx.forget, store.DiscoveredDevice{MAC: p.MAC, IsGateway: ref.Kind == store.KindGateway})
			return nil
		})
		if err != nil {
			r.OK, r.Status, r.Error = false, 500, "internal error"
			if e, ok := apperr.As(err); ok && kindStatus[e.Kind] != 0 {
				r.Status, r.Error, r.Field = kindStatus[e.Kind], e.Msg, e.Field
			} else {
				s.log.Error("batch replace item failed", "asset_uid", it.AssetUID, "mac", it.MAC, "err", err)
			}
			res.Failed++
		} else {
			r.Result = &plan
			res.Succeeded++
		}
		res.Results = append(res.Results, r)
	}
	s.afterCommit(fx)
	return res, nil
}
