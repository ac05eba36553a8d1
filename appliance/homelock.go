package appliance

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lockHome takes an exclusive advisory lock (flock) on path, created if
// need be, and returns its release. The kernel drops it when the process
// ends, crash included, so a stale file never blocks a start.
func lockHome(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked by another process (is another beaconhub running with the same home?)", path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
