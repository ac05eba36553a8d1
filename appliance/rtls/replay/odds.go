package replay

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"beaconhub/appliance/rtls"
)

// AsEval sets opts as rtls-eval runs ds: grid's motion (diffusion)
// measured on train.csv's walk, and the zone filters' odds chosen on it
// (SelectOdds), each unless given says the command line set it. It
// returns what rtls-eval notes of each ("" for nothing to say).
func AsEval(ds *Dataset, opts Options, given func(param string) bool) (out Options, motion, odds string, err error) {
	if opts.Params == (rtls.Params{}) {
		opts.Params = rtls.DefaultParams()
	}
	d, lag, pairs, walked := ds.Motion()
	if walked && !given("diffusion") {
		// Through Set, so what runs is a value the engine takes.
		if err := opts.Params.Set("diffusion", fmt.Sprint(d)); err != nil {
			return opts, "", "", fmt.Errorf("measured motion: %w", err)
		}
		motion = MotionNote(d, lag, pairs)
	} else if !walked {
		motion = ds.MotionRefused() // "" for a file that is no walk at all
	}
	if walked && !given("switch_odds") {
		ch, err := SelectOdds(ds, opts)
		if err != nil {
			return opts, "", "", err
		}
		if len(ch) > 0 {
			opts.Odds = map[string]float64{}
			for a, c := range ch {
				opts.Odds[a] = c.Odds
			}
			odds = OddsNote(ch)
		}
	}
	return opts, motion, odds, nil
}

// OddsCandidates are the switch_odds SelectOdds chooses between: "strong"
// and "very strong" evidence on Jeffreys' scale of Bayes factors. The
// first is the engine's default.
var OddsCandidates = []float64{10, 30}

// FlipCost (seconds of a wrong zone) is what SelectOdds charges a flip:
// a candidate scores its accuracy (%) less 100 x FlipCost / 60 points
// per flip a minute (10 points for one flip a minute). A flip is a zone
// left and, mostly, entered again: two interval records, two frames to
// every live view, perhaps an alert; the target (85% with under
// one flip per 10 minutes) puts a flip at several seconds of error.
const FlipCost = 6.0

// oddsBlocks is how many blocks of train.csv, by time, SelectOdds holds
// out in turn (alternate blocks: every block is surveyed by one fold
// and scored by the other, so both see most of the site).
const oddsBlocks = 8

// OddsScore is one candidate's score over the held-out blocks.
type OddsScore struct {
	Odds        float64
	Accuracy    float64 // share of scored sightings
	FlipsPerMin float64
	Scored      int // sightings scored, over both folds
}

// OddsChoice is SelectOdds' answer for one algorithm.
type OddsChoice struct {
	Odds   float64
	Scores []OddsScore // per candidate, in OddsCandidates' order
}

// oddsAlgorithms are the algorithms whose decision SwitchOdds sets.
var oddsAlgorithms = []string{rtls.AlgFilter, rtls.AlgBayes, rtls.AlgGrid, rtls.AlgFusion}

// SelectOdds chooses, for each filter among opts.Algorithms (all four
// when empty), the switch_odds of OddsCandidates that tracks train.csv
// best when trained on the rest of it: train.csv is cut by time into
// oddsBlocks blocks, the even blocks surveyed and the odd ones replayed
// and scored, then the other way round; each candidate's accuracy and
// flips are pooled over both, and the best accuracy less FlipCost per
// flip wins (a tie keeps the default). How often a site's tags change
// zone decides what the odds cost in lag, and only a walk through time
// shows it; the caller asks only when train.csv is one (Motion). Nothing
// of test.csv is read.
func SelectOdds(ds *Dataset, opts Options) (map[string]OddsChoice, error) {
	if err := CheckAlgorithms(opts.Algorithms); err != nil {
		return nil, err
	}
	algs := opts.Algorithms
	if len(algs) == 0 {
		algs = oddsAlgorithms
	}
	algs = slices.DeleteFunc(slices.Clone(algs), func(a string) bool { return !slices.Contains(oddsAlgorithms, a) })
	if len(algs) == 0 {
		return nil, nil
	}
	if opts.Params == (rtls.Params{}) {
		// Run's zero Params are the defaults, DecideEvery included;
		// with SwitchOdds set, the other zero fields would be.
		opts.Params = rtls.DefaultParams()
	}
	folds := holdOut(ds, oddsBlocks)
	type tally struct {
		scored, correct, flips int
		stableS                float64
	}
	sum := map[string][]tally{}
	for _, a := range algs {
		sum[a] = make([]tally, len(OddsCandidates))
	}
	for _, sub := range folds {
		for ci, c := range OddsCandidates {
			o := opts
			o.Algorithms, o.Odds = algs, nil
			// Zero fields are the defaults (Run's rule); the candidates
			// are valid odds.
			o.Params.SwitchOdds = c
			if opts.WorkDir != "" { // each run's store apart, in the caller's directory
				d, err := os.MkdirTemp(opts.WorkDir, "fold-")
				if err != nil {
					return nil, err
				}
				o.WorkDir = d
			}
			rs, err := Run(sub, o)
			if o.WorkDir != opts.WorkDir {
				os.RemoveAll(o.WorkDir)
			}
			if err != nil {
				return nil, err
			}
			for _, r := range rs {
				t := &sum[r.Algorithm][ci]
				t.scored, t.correct, t.flips, t.stableS = t.scored+r.Scored, t.correct+r.Correct, t.flips+r.Flips, t.stableS+r.StableS
			}
		}
	}
	out := map[string]OddsChoice{}
	for _, a := range algs {
		if !slices.ContainsFunc(sum[a], func(t tally) bool { return t.scored > 0 }) {
			continue // not ready, or nothing held out to score: no choice to report
		}
		var ch OddsChoice
		for ci, t := range sum[a] {
			sc := OddsScore{Odds: OddsCandidates[ci], Scored: t.scored}
			if t.scored > 0 {
				sc.Accuracy = float64(t.correct) / float64(t.scored)
			}
			if t.stableS > 0 {
				sc.FlipsPerMin = float64(t.flips) / (t.stableS / 60)
			}
			ch.Scores = append(ch.Scores, sc)
		}
		ch.Odds = chooseOdds(ch.Scores)
		out[a] = ch
	}
	return out, nil
}

// chooseOdds is the candidate with the best accuracy (%) less FlipCost
// seconds a flip; on a tie the first (the default).
func chooseOdds(scores []OddsScore) float64 {
	best, odds := 0.0, 0.0
	for i, sc := range scores {
		if v := 100*sc.Accuracy - 100*FlipCost/60*sc.FlipsPerMin; i == 0 || v > best {
			best, odds = v, sc.Odds
		}
	}
	return odds
}

// holdOut cuts ds.Train (in time order) into n blocks of about as many
// rows (the rows of one millisecond in one block) and returns two
// recordings: one surveys the odd blocks and tracks the even ones, the
// other the other way round. Each block's beacons are beacons of their
// own ("B1#3" in block 3, with a MAC of its own): joined end to end, a
// beacon would jump from where one block left it to where the next
// finds it, and be scored on a zone change no tag made; apart, each
// starts afresh, with its warm-up.
func holdOut(ds *Dataset, n int) [2]*Dataset {
	rows := ds.Train
	var parts [2][]Row // [0]: even blocks, [1]: odd blocks
	beacons := maps.Clone(ds.Beacons)
	b := 0
	for i, r := range rows {
		// A millisecond's rows stay in the block of its first.
		if i == 0 || r.T != rows[i-1].T {
			b = i * n / len(rows)
		}
		id := fmt.Sprintf("%s#%d", r.Beacon, b)
		if _, ok := beacons[id]; !ok {
			mac := ds.Beacons[r.Beacon]
			mac[1] = 0xB0 | byte(b) // Load's MACs have 0 there
			beacons[id] = mac
		}
		r.Beacon = id
		parts[b%2] = append(parts[b%2], r)
	}
	var out [2]*Dataset
	for k := range out {
		sub := *ds
		sub.Beacons = beacons
		sub.Train, sub.Test = parts[1-k], parts[k]
		out[k] = &sub
	}
	return out
}

// OddsNote says what SelectOdds chose, for rtls-eval's notes.
func OddsNote(ch map[string]OddsChoice) string {
	var parts []string
	for _, a := range oddsAlgorithms {
		c, ok := ch[a]
		if !ok {
			continue
		}
		var sc []string
		for _, s := range c.Scores {
			sc = append(sc, fmt.Sprintf("%g: %.1f%% / %.2f", s.Odds, 100*s.Accuracy, s.FlipsPerMin))
		}
		parts = append(parts, fmt.Sprintf("%s %g (%s)", a, c.Odds, strings.Join(sc, ", ")))
	}
	return fmt.Sprintf("switch_odds chosen on train.csv, half its blocks surveyed and the other half tracked, a flip costing %g s of a wrong zone: %s (--set switch_odds=V overrides it)",
		FlipCost, strings.Join(parts, "; "))
}
