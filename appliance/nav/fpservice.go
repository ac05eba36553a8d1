package nav

import (
	"errors"
	"io"
	"sync"

	"beaconhub/appliance/apperr"
	"beaconhub/store"
)

// Survey and fingerprint model operations of the Service. Models are
// cached per floor: every project hash needs them, and rebuilding from
// thousands of stored samples per request would dominate the payload
// build. Every survey write goes through the Service, which drops the
// floor's cache entry (bbolt admits one process, so nothing else writes).

// modelCache's gen counts drops: a model read from the database before a
// concurrent write is not stored after that write dropped the entry.
type modelCache struct {
	mu  sync.Mutex
	gen uint64
	m   map[uint64]*Model // nil value: floor has no samples
}

func (c *modelCache) get(floor uint64) (*Model, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.m[floor]
	return m, c.gen, ok
}

func (c *modelCache) put(floor uint64, m *Model, gen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return
	}
	if c.m == nil {
		c.m = map[uint64]*Model{}
	}
	c.m[floor] = m
}

func (c *modelCache) drop(floor uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	delete(c.m, floor)
}

// AddSurvey parses a JSONL upload and appends it to the floor's survey in
// one transaction; it returns how many were added and the floor's total.
func (s *Service) AddSurvey(floor uint64, r io.Reader) (added, total int, err error) {
	if _, err := s.Floor(floor); err != nil {
		return 0, 0, err
	}
	samples, err := ParseSurvey(r, floor)
	if err != nil {
		return 0, 0, err
	}
	defer s.models.drop(floor)
	total, err = s.db.AddSurveySamples(floor, samples, MaxSurveyPerFloor, s.clock.Now())
	if errors.Is(err, store.ErrLimit) {
		return 0, 0, apperr.TooLarge("a floor keeps at most %d survey samples", MaxSurveyPerFloor)
	}
	return len(samples), total, store.ClientErr(err, "floor")
}

// Survey returns a floor's samples in upload order.
func (s *Service) Survey(floor uint64) ([]store.SurveySample, error) {
	if _, err := s.Floor(floor); err != nil {
		return nil, err
	}
	out, _, err := s.db.SurveySamples(floor)
	return out, err
}

// DeleteSurvey removes every sample of a floor.
func (s *Service) DeleteSurvey(floor uint64) (int, error) {
	defer s.models.drop(floor)
	n, err := s.db.DeleteSurvey(floor, s.clock.Now())
	return n, store.ClientErr(err, "floor")
}

// DeleteSurveySample removes one sample and returns its floor.
func (s *Service) DeleteSurveySample(id uint64) (uint64, error) {
	floor, err := s.db.DeleteSurveySample(id, s.clock.Now())
	if err != nil {
		return 0, store.ClientErr(err, "survey sample")
	}
	s.models.drop(floor)
	return floor, nil
}

// FingerprintModel returns the floor's model, or nil when it has no survey.
// generated_at is the time of the survey's last change, so an unchanged
// survey gives a byte-equal model and an unchanged project hash.
func (s *Service) FingerprintModel(floor uint64) (*Model, error) {
	m, gen, ok := s.models.get(floor)
	if ok {
		return m, nil
	}
	samples, rev, err := s.db.SurveySamples(floor)
	if err != nil {
		return nil, err
	}
	if len(samples) > 0 {
		scans := make([]Scan, len(samples))
		for i, sm := range samples {
			scans[i] = ScanOf(sm)
		}
		built := BuildModel(floor, scans, DefaultK, DefaultMissingRSSI, rev)
		m = &built
	}
	s.models.put(floor, m, gen)
	return m, nil
}

// FloorEvaluation is the quality report of a floor's model.
type FloorEvaluation struct {
	FloorID  uint64     `json:"floor_id"`
	Samples  int        `json:"samples"`
	Points   int        `json:"points"`
	Features int        `json:"features"`
	K        int        `json:"k"`
	LOO      ErrorStats `json:"loo"`
	Centroid ErrorStats `json:"centroid_baseline"`
}

// EvaluateFloor reports the leave-one-out error of the floor's model and,
// for scale, the error of always answering the centroid of the survey.
func (s *Service) EvaluateFloor(floor uint64) (FloorEvaluation, error) {
	if _, err := s.Floor(floor); err != nil {
		return FloorEvaluation{}, err
	}
	m, err := s.FingerprintModel(floor)
	if err != nil {
		return FloorEvaluation{}, err
	}
	if m == nil {
		return FloorEvaluation{}, apperr.NotFound("floor %d has no survey samples", floor)
	}
	samples, _, err := s.db.SurveySamples(floor)
	if err != nil {
		return FloorEvaluation{}, err
	}
	pts := make([]Scan, len(m.Samples))
	for i, p := range m.Samples {
		pts[i] = Scan{X: p.X, Y: p.Y}
	}
	return FloorEvaluation{FloorID: floor, Samples: len(samples), Points: len(m.Samples), Features: len(m.Features), K: m.K,
		LOO: EvaluateLOO(*m), Centroid: CentroidBaseline(*m, pts)}, nil
}
