package nav

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"beaconhub/store"
)

// TestModelCacheNeverStale: readers building models while uploads land
// must not leave a model of an older survey in the cache.
func TestModelCacheNeverStale(t *testing.T) {
	s := newService(t)
	f, err := s.SaveFloor(store.Floor{Name: "G"})
	if err != nil {
		t.Fatal(err)
	}
	const uploads = 20
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.FingerprintModel(f.ID); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := 0; i < uploads; i++ {
		line := fmt.Sprintf(`{"x": %d, "y": 1, "ble": [{"mac": "AABBCCDDEEFF", "rssi": -60}]}`, i)
		if _, _, err := s.AddSurvey(f.ID, strings.NewReader(line)); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	m, err := s.FingerprintModel(f.ID)
	if err != nil || m == nil || len(m.Samples) != uploads {
		t.Fatalf("model after uploads: %v %v", m, err)
	}
	if _, err := s.DeleteSurvey(f.ID); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.FingerprintModel(f.ID); m != nil {
		t.Fatalf("model after delete: %+v", m)
	}
}
