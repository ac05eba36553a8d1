package rtls

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Params are the tuning knobs shared by the algorithms. Defaults (see
// DefaultParams and docs/rtls.md) come from BLE radio physics and
// walking speed, not from any one recording.
type Params struct {
	// SmoothTau is the time constant of the per-gateway exponential moving
	// average of a beacon's RSSI: a reading dt after the previous one gets
	// weight 1-exp(-dt/SmoothTau).
	SmoothTau time.Duration
	// Stale is how long a gateway's smoothed reading counts after it last
	// heard the beacon; older readings are "not heard".
	Stale time.Duration
	// Floor (dBm) stands for "not heard" in fingerprint distances.
	Floor float64
	// DecideEvery rate-limits the decisions of strongest, centroid and
	// k-NN per beacon (0: decide on every sighting). The filter folds in
	// every sighting regardless.
	DecideEvery time.Duration
	// Dwell is how long a new zone must keep winning before centroid and
	// k-NN report it.
	Dwell time.Duration
	// Margin (dB) and MarginDwell: strongest-gateway hysteresis.
	Margin      float64
	MarginDwell time.Duration
	// TxPower (dBm at 1 m) and PathLoss (exponent n) of the log-distance
	// model RSSI = TxPower - 10 n log10(d).
	TxPower  float64
	PathLoss float64
	// K nearest survey samples vote in k-NN, weighted 1/distance.
	K int
	// MeanStay is the expected time a beacon stays in one zone; the
	// filter moves probability mass to neighbours at rate 1/MeanStay.
	MeanStay time.Duration
	// Evidence scales the filter's log-likelihood per SampleWindow of
	// readings on top of the model's own weight for one window: with
	// survey samples that weight is calibrated on the survey (a
	// temperature fitted so the leave-one-out posterior of each sample is
	// honest, emission.go calibrate: naive Bayes counts correlated
	// gateways as independent, by a factor that depends on the site),
	// without samples it is 0.5. At 1 a calibrated window counts at face
	// value.
	Evidence float64
	// SwitchOdds is the hysteresis of the filters (hmm, bayes, grid) in
	// probability space:
	// the reported zone moves (one hop) towards the most probable zone
	// only when that zone is at least SwitchOdds times as probable as the
	// reported one. 10 is "strong" evidence on Jeffreys' scale of Bayes
	// factors: with calibrated posteriors the odds mean what they say,
	// and a change needs the challenger at about 91% against the
	// incumbent.
	SwitchOdds float64
	// Sigma (dB) is the spread of a reading around the log-distance
	// model's expectation (the filter without survey samples), and the
	// least site-wide spread of a gateway the survey-trained model assumes.
	Sigma float64
	// SigmaFloor (dB) is the least spread of a gateway's readings in one
	// zone the survey-trained model assumes, however alike the samples.
	SigmaFloor float64
	// Lost is the probability that a gateway in range misses a given
	// window's advertisements for reasons unrelated to where the beacon
	// is (scan duty cycle, collisions, report batching or truncation):
	// the filter's P(heard) is at most 1-Lost, so one silent gateway is
	// never overwhelming evidence against a zone.
	Lost float64
	// SampleWindow is the window Record averages into one survey sample.
	SampleWindow time.Duration
	// OffsetTau is the memory of a beacon's tag offset estimate (how
	// much louder or quieter it is heard than the survey tag, offset.go);
	// negative turns the estimate off.
	OffsetTau time.Duration
	// OffsetSpread (dB) is the prior spread of a tag's offset: how far
	// from the survey tag a tag is expected to be heard before any of
	// its readings says so.
	OffsetSpread float64
	// Diffusion (m² a second) is how fast grid's belief spreads: the
	// variance, along each axis, that a second adds to where the tag may
	// be (a random walk). At most gridKernelVar, one neighbour step a
	// second.
	Diffusion float64
	// StandFor and MoveFor are how long on average a tag stands still
	// and how long it moves before it stands again: grid keeps a belief
	// for each (a tag standing does not spread, one moving spreads by
	// Diffusion) and the evidence says which it is. Half a minute each
	// by default; a negative StandFor turns the standing belief off, every
	// tag then moving at any time. Standing cut the flips of tags that
	// stand for minutes (beds, pumps) and of people stopping in rooms,
	// and costs a tag walking off a little time to be followed
	// (docs/rtls.md, "Standing tags").
	StandFor time.Duration
	MoveFor  time.Duration
}

// DefaultParams are documented in docs/rtls.md.
func DefaultParams() Params {
	return Params{
		SmoothTau:    2 * time.Second,
		Stale:        6 * time.Second,
		Floor:        -100,
		DecideEvery:  time.Second,
		Dwell:        2 * time.Second,
		Margin:       6,
		MarginDwell:  3 * time.Second,
		TxPower:      -59,
		PathLoss:     2.5,
		K:            5,
		MeanStay:     30 * time.Second,
		Evidence:     1,
		SwitchOdds:   10,
		Sigma:        6,
		SigmaFloor:   3,
		SampleWindow: 2 * time.Second,
		Lost:         0.2,
		OffsetTau:    10 * time.Minute,
		OffsetSpread: 6,
		Diffusion:    gridKernelVar,
		StandFor:     30 * time.Second,
		MoveFor:      30 * time.Second,
	}
}

// withDefaults fills zero fields (DecideEvery 0 is meaningful, so it is
// only defaulted together with everything else).
func (p Params) withDefaults() Params {
	d := DefaultParams()
	if p == (Params{}) {
		return d
	}
	setD := func(v *time.Duration, def time.Duration) {
		if *v <= 0 {
			*v = def
		}
	}
	setF := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	setD(&p.SmoothTau, d.SmoothTau)
	setD(&p.Stale, d.Stale)
	setD(&p.Dwell, d.Dwell)
	setD(&p.MarginDwell, d.MarginDwell)
	setD(&p.MeanStay, d.MeanStay)
	setD(&p.SampleWindow, d.SampleWindow)
	if p.OffsetTau == 0 {
		p.OffsetTau = d.OffsetTau
	}
	// Spells under a second run as the defaults (Set and the
	// configuration refuse them); a negative StandFor is off.
	if p.StandFor >= 0 && p.StandFor < time.Second {
		p.StandFor = d.StandFor
	}
	if p.MoveFor < time.Second {
		p.MoveFor = d.MoveFor
	}
	if p.DecideEvery < 0 {
		p.DecideEvery = 0
	}
	setF(&p.Floor, d.Floor)
	setF(&p.Margin, d.Margin)
	setF(&p.TxPower, d.TxPower)
	setF(&p.PathLoss, d.PathLoss)
	setF(&p.Evidence, d.Evidence)
	setF(&p.SwitchOdds, d.SwitchOdds)
	setF(&p.Sigma, d.Sigma)
	setF(&p.SigmaFloor, d.SigmaFloor)
	setF(&p.Lost, d.Lost)
	setF(&p.OffsetSpread, d.OffsetSpread)
	// Not a number, or beyond one step a second, it would stall or
	// scatter the belief: such a value runs as the default (Set and the
	// configuration refuse it).
	if !diffusionOK(p.Diffusion) {
		p.Diffusion = d.Diffusion
	}
	if p.K <= 0 {
		p.K = d.K
	}
	if p.K > maxK {
		p.K = maxK
	}
	return p
}

const maxK = 16

// rssiAt is the log-distance model's expected RSSI at d metres.
func (p *Params) rssiAt(d float64) float64 {
	return p.TxPower - 10*p.PathLoss*math.Log10(math.Max(d, 0.5))
}

// distance inverts rssiAt (metres).
func (p *Params) distance(rssi float64) float64 {
	return math.Max(math.Pow(10, (p.TxPower-rssi)/(10*p.PathLoss)), 0.5)
}

// ParamNames are the names Set takes: each Params field in snake case
// (SwitchOdds is switch_odds).
func ParamNames() []string {
	t := reflect.TypeFor[Params]()
	out := make([]string, t.NumField())
	for i := range out {
		out[i] = snake(t.Field(i).Name)
	}
	return out
}

// ParamsFrom are the defaults with entries applied, each "name=value"
// as Set takes them (names and values trimmed); a name given twice, an
// entry without "=" or one Set refuses is an error. rtls-eval's --set
// and the appliance's server_rtls_params both read them so.
func ParamsFrom(entries []string) (Params, error) {
	p := DefaultParams()
	seen := map[string]bool{}
	for _, e := range entries {
		name, value, ok := strings.Cut(e, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return p, fmt.Errorf("%q: want name=value, e.g. switch_odds=30", e)
		}
		if seen[name] {
			return p, fmt.Errorf("%s given twice", name)
		}
		seen[name] = true
		if err := p.Set(name, value); err != nil {
			return p, err
		}
	}
	return p, nil
}

// ParamsKept is ParamsFrom for a configuration in use: the entries valid
// alone and together apply, and why names the others, ignored ("" when
// none is). A release that narrows a range must not stop an appliance
// whose file an older one accepted; the file keeps what was written.
func ParamsKept(entries []string) (p Params, kept []string, why string) {
	if p, err := ParamsFrom(entries); err == nil {
		return p, entries, ""
	}
	kept = []string{}
	var dropped []string
	for _, e := range entries {
		if _, err := ParamsFrom([]string{e}); err != nil {
			dropped = append(dropped, fmt.Sprintf("%q (%v)", e, err))
			continue
		}
		kept = append(kept, e)
	}
	p, err := ParamsFrom(kept)
	if err != nil {
		return DefaultParams(), []string{}, fmt.Sprintf("every entry ignored (%v): tracking runs with the defaults", err)
	}
	why = "ignored " + strings.Join(dropped, ", ")
	if len(kept) == 0 {
		return p, kept, why + ": tracking runs with the defaults"
	}
	return p, kept, why + "; the other entries apply"
}

// Set sets the field named name (ParamNames) from text: a duration
// ("30s") for durations, a number otherwise. It lets rtls-eval try a
// setting on a recording without a rebuild.
func (p *Params) Set(name, text string) error {
	v := reflect.ValueOf(p).Elem()
	for i := 0; i < v.NumField(); i++ {
		if snake(v.Type().Field(i).Name) != name {
			continue
		}
		f := v.Field(i)
		old := reflect.New(f.Type()).Elem()
		old.Set(f)
		text = strings.TrimSpace(text)
		switch {
		case f.Type() == reflect.TypeFor[time.Duration]():
			d, err := time.ParseDuration(text)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			f.SetInt(int64(d))
		case f.Kind() == reflect.Int:
			n, err := strconv.Atoi(text)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			f.SetInt(int64(n))
		case f.Kind() == reflect.Float64:
			x, err := strconv.ParseFloat(text, 64)
			if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: %q is not a number", name, text)
			}
			f.SetFloat(x)
		default:
			return fmt.Errorf("%s: cannot be set", name)
		}
		// A value that makes no sense, or that the engine would not use
		// as given (0 stands for the default, K is bounded), is refused,
		// so what rtls-eval echoes is what ran. The range first: a value
		// out of it may also run as the default (diffusion), and the
		// range is what the user needs to hear.
		var err error
		if err = p.check(); err != nil {
			err = fmt.Errorf("%s=%s: %w", name, text, err)
		} else if used := reflect.ValueOf(p.withDefaults()).Field(i); !used.Equal(f) {
			err = fmt.Errorf("%s=%s would run as %v", name, text, used)
		}
		if err != nil {
			f.Set(old)
		}
		return err
	}
	return fmt.Errorf("unknown parameter %q (known: %s)", name, strings.Join(ParamNames(), ", "))
}

func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// check reports a parameter outside its meaningful range.
func (p *Params) check() error {
	switch {
	case p.Lost <= 0 || p.Lost >= 1:
		return fmt.Errorf("lost must be between 0 and 1")
	case p.Sigma <= 0 || p.SigmaFloor <= 0 || p.OffsetSpread <= 0:
		return fmt.Errorf("sigma, sigma_floor and offset_spread must be positive")
	case p.PathLoss <= 0 || p.Evidence <= 0:
		return fmt.Errorf("path_loss and evidence must be positive")
	case p.SwitchOdds < 1:
		return fmt.Errorf("switch_odds must be at least 1")
	case p.Margin < 0:
		return fmt.Errorf("margin must not be negative")
	case p.StandFor == 0:
		// 0 turned standing off until it became the default; a site
		// upgrading with stand_for=0 must hear how to keep it off.
		return fmt.Errorf("stand_for=0 no longer turns standing off: give a negative time (stand_for=-1s) for off, or at least 1s")
	case p.StandFor > 0 && p.StandFor < time.Second || p.MoveFor != 0 && p.MoveFor < time.Second:
		// Spells shorter than the second between updates mean nothing
		// to the chain, and at a nanosecond a belief's standing half
		// rounded to 0 (a review).
		return fmt.Errorf("stand_for must be negative (off) or at least 1s, and move_for at least 1s")
	case !diffusionOK(p.Diffusion):
		return fmt.Errorf("diffusion must be above 0 and at most %.4g m² (one neighbour step a second)", gridKernelVar)
	// Upper bounds and the RSSI fields' range: each value past them was
	// taken, and ran the algorithms into nothing (a review: floor=5
	// made every gateway too quiet, sample_window=999us divided by a
	// window of 0 ms, sigma=1e300 or decide_every=1000h took accuracy
	// to 0-20% in rtls-eval).
	case p.Floor > 0 || p.Floor < -127 || p.TxPower > 20 || p.TxPower < -127:
		return fmt.Errorf("floor must be between -127 and 0 dBm, and tx_power between -127 and 20")
	case p.SampleWindow != 0 && p.SampleWindow < 100*time.Millisecond:
		return fmt.Errorf("sample_window must be at least 100ms")
	case p.Sigma > 40 || p.SigmaFloor > 40 || p.OffsetSpread > 40 || p.Margin > 127:
		return fmt.Errorf("sigma, sigma_floor and offset_spread must be at most 40 dB, and margin at most 127 (the readings' range)")
	case p.PathLoss < 0.5 || p.PathLoss > 10 || p.Evidence < 0.01 || p.Evidence > 100 || p.SwitchOdds > 1e6:
		return fmt.Errorf("path_loss must be between 0.5 and 10, evidence between 0.01 and 100, and switch_odds at most 1e6")
	case p.DecideEvery > time.Minute:
		return fmt.Errorf("decide_every must be at most 1m (a beacon turns unknown after 60 s by default)")
	// Not stand_for and move_for: equipment stands for days, and the
	// chain runs at any spell (TestGridStandingExtremeTimes).
	case max(p.SmoothTau, p.Stale, p.Dwell, p.MarginDwell, p.MeanStay, p.SampleWindow, p.OffsetTau) > 24*time.Hour:
		return fmt.Errorf("durations other than stand_for and move_for must be at most 24h")
	}
	return nil
}

// diffusionOK reports whether d is a diffusion grid runs as given: above
// 0 (NaN is not) and at most one neighbour step a second. withDefaults
// and check read the same range.
func diffusionOK(d float64) bool { return d > 0 && d <= gridKernelVar }
