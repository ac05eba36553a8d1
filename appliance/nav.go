package appliance

import (
	"fmt"

	"beaconhub/appliance/nav"
)

// buildNav starts indoor navigation wherever the database is kept; the
// graph is small enough to compile at start and after every edit.
func (a *App) buildNav() error {
	svc, err := nav.New(a.db, a.clock)
	if err != nil {
		return fmt.Errorf("navigation: %w", err)
	}
	a.nav = svc
	return nil
}
