package eink

import (
	"sync"
	"testing"

	"beaconhub/appliance/sensors"
)

// gateReadings answers v for every sensor; once armed, it blocks the
// next Latest call (a poll mid-render) until released.
type gateReadings struct {
	mu      sync.Mutex
	v       float64
	armed   bool
	entered chan struct{} // closed when the armed call has begun
	release chan struct{} // closed by the test: the armed call answers
}

func (g *gateReadings) arm() {
	g.mu.Lock()
	g.armed, g.entered, g.release = true, make(chan struct{}), make(chan struct{})
	g.mu.Unlock()
}

func (g *gateReadings) set(v float64) {
	g.mu.Lock()
	g.v = v
	g.mu.Unlock()
}

func (g *gateReadings) Latest(string, uint8) (sensors.Latest, bool) {
	g.mu.Lock()
	armed := g.armed
	g.armed = false
	entered, release := g.entered, g.release
	g.mu.Unlock()
	if armed {
		close(entered)
		<-release
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return sensors.Latest{TS: 1, Value: g.v}, true
}

const sensorLayout2 = `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 5 - patient Svoboda"},{"t":"sensor","sensor_uid":"SEN-K1-1","metric":2,"label":"T","unit":"C","decimals":1,"x":20,"y":80}]}`

// pollAsync starts a poll of mac that blocks mid-render; returns a func
// that releases it and returns its reply.
func (r *rig) pollAsync(g *gateReadings, mac string) func() reply {
	g.arm()
	var body []byte
	var err error
	done := make(chan struct{})
	go func() {
		body, err = r.svc.Poll(nil, PollRequest{MAC: mac})
		close(done)
	}()
	<-g.entered
	return func() reply {
		close(g.release)
		<-done
		if err != nil {
			r.t.Fatal(err)
		}
		return decodeReply(r.t, body)
	}
}

// dropOwnRow deletes the row a device registered on its own (a device
// replaced away that polls again registers as pending), as an admin
// does before replacing it in again (409 otherwise).
func (r *rig) dropOwnRow(mac string) {
	r.t.Helper()
	if id := r.idOf(mac); id != 0 {
		if err := r.svc.Delete(id); err != nil {
			r.t.Fatal(err)
		}
	}
}

// The row's own device B polls; its poll is rendering when the admin
// replaces B with the spare X (the wrong row) and finishes after. That
// poll is not served row 2 (B is no longer its device; it goes on as a
// device replaced away) and leaves X's Fresh: it cleared it, the
// correction then overwrote what X keeps, and X was later served the
// number it still showed (a review).
func TestAnOldDevicesPollInFlightLeavesTheNewOneFresh(t *testing.T) {
	r := newRig(t)
	g := &gateReadings{v: 4}
	shown := r.spareDrewRoom3()
	s := shown.Version
	r.sensor("112233445566", "SEN-K1-1")
	r2 := r.approve(spareMacB, sensorLayout2)
	r.svc.rd = g
	r.setVersion(r2, (s+40-1)%99+1)
	r.poll(spareMacB) // B draws its row

	finish := r.pollAsync(g, spareMacB) // B polls again; render under way
	r.replace(r2, spareMacX)            // the wrong row
	servedB := finish()
	r.svc.mu.RLock()
	fresh := r.svc.polls[r2].p.Fresh
	r.svc.mu.RUnlock()
	t.Logf("B's in-flight poll served B version %d; row 2 Fresh after it: %v (X has not polled)", servedB.Version, fresh)
	if !fresh {
		t.Errorf("B's poll in flight across the replace cleared X's Fresh")
	}
	r.dropOwnRow(spareMacB)  // B, replaced away, registered as pending: the admin deletes that row
	r.replace(r2, spareMacB) // corrected before X polled
	first := r.firstOnRow3(vPrev(s))
	t.Logf("X shows %d %q; on row 3 it is served %d %q", s, texts(shown), first.Version, texts(first))
	if first.Version == s {
		t.Errorf("X never polled on row 2, but B's poll in flight across the replace cleared Fresh; X's kept version was overwritten and on row 3 it is served %d, the number it shows: the door keeps %q instead of %q",
			s, texts(shown), texts(first))
	}
}

// X is replaced onto the wrong row and polls there; its poll is rendering
// when the admin corrects (puts B back). The poll is not served row 2
// (it was, unkept, and X later joined a row one below that number and
// was served it again: its door kept row 2's patient; a review).
func TestANewDevicesPollInFlightAcrossACorrectionIsNotServedTheRow(t *testing.T) {
	r := newRig(t)
	g := &gateReadings{v: 4}
	r.spareDrewRoom3()
	r.sensor("112233445566", "SEN-K1-1")
	r2 := r.approve(spareMacB, sensorLayout2)
	r.svc.rd = g
	r.poll(spareMacB)
	r.replace(r2, spareMacX)
	finish := r.pollAsync(g, spareMacX) // X's first poll on row 2, rendering
	r.replace(r2, spareMacB)
	got := finish()
	r.dropOwnRow(spareMacX) // X, taken off, registered as pending: the admin deletes that row
	t.Logf("X was served %d %q on row 2 after it was taken off; X keeps %d", got.Version, texts(got), r.keptOf(spareMacX))
	first := r.firstOnRow3(vPrev(got.Version))
	t.Logf("on row 3 X is served %d %q", first.Version, texts(first))
	if first.Version == got.Version {
		t.Errorf("X shows %d %q (served by the poll in flight across the correction) and on row 3 is served %d again: the door keeps %q",
			got.Version, texts(got), first.Version, texts(got))
	}
}
