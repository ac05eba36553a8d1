package push

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"beaconhub/appliance/config"
	"beaconhub/store"

	bolt "go.etcd.io/bbolt"
)

// holdFront forwards to the fake ntfy on 127.0.0.1 and, once armed,
// holds the publish number holdAt (counted from arming) until release.
type holdFront struct {
	mu      sync.Mutex
	target  *url.URL
	armed   bool
	n       int
	holdAt  int
	reached chan struct{}
	release chan struct{}
}

func (h *holdFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	h.mu.Lock()
	hold := false
	if h.armed && r.Method == http.MethodPost && r.URL.Path == "/" {
		h.n++
		hold = h.n == h.holdAt
	}
	tgt := h.target
	h.mu.Unlock()
	if hold {
		close(h.reached)
		<-h.release
	}
	httputil.NewSingleHostReverseProxy(tgt).ServeHTTP(w, r)
}

// Five fridges went out of range and the process died before push heard
// them. At the start reconcile announces them one by one; the process
// dies again while the third is being posted (a boot loop, a watchdog,
// power). What was posted is saved as it goes, so the next start repeats
// only the one in flight; saved only at reconcile's end, it repeated
// everything it had sent (a review).
func TestACrashDuringReconcileDoesNotRepeatWhatItSent(t *testing.T) {
	front := &holdFront{holdAt: 3, reached: make(chan struct{}), release: make(chan struct{})}
	fs := httptest.NewServer(front)
	defer fs.Close()
	r := newRigWith(t, false, func(c *config.Config) { c.PushServerURL = fs.URL })
	u, _ := url.Parse(r.ntfy.URL)
	front.target = u
	r.close()
	db := reopenForCrash(t, r)
	at := r.clk.Now()
	var recs []store.SensorConditionRecord
	for _, f := range []string{"F1", "F2", "F3", "F4", "F5"} {
		recs = append(recs, sensorRec("range", f, "active", "temperature 12.00 °C outside 2..8", at))
	}
	if err := db.Update(func(tx *bolt.Tx) error { return store.ApplySensorConditions(tx, recs) }); err != nil {
		t.Fatal(err)
	}
	_ = db.Close()
	front.mu.Lock()
	front.armed = true
	front.mu.Unlock()
	opened := make(chan struct{})
	go func() { r.open(); close(opened) }()
	select {
	case <-front.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("the third publish never came")
	}
	// The crash: what is committed now is what the next start finds.
	dir2 := t.TempDir()
	f, err := os.Create(filepath.Join(dir2, "service.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := r.db.Bolt().View(func(tx *bolt.Tx) error { _, err := tx.WriteTo(f); return err }); err != nil {
		t.Fatal(err)
	}
	_ = f.Close()
	before := subjectsPhases(t, r.msgs("TST000-sensors"))
	close(front.release)
	<-opened
	r.close()
	r2 := &rig{t: t, dir: dir2, clk: r.clk, ntfy: r.ntfy, live: r.live, tr: r.tr}
	r2.open()
	r2.svc.Idle()
	all := r.msgs("TST000-sensors")
	t.Logf("sent before the crash: %s; everything: %s", before, subjectsPhases(t, all))
	for _, s := range []string{"range:F1", "range:F2"} {
		if n := len(activeOf(all, s)); n != 1 {
			t.Errorf("%s announced %d times: posted before the crash, announced again after it", s, n)
		}
	}
}
