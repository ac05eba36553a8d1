package appliance

import (
	"fmt"
	"log/slog"

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
	a.renameAlso(navFollower{svc, a.log})
	return nil
}

// navFollower recompiles the navigation graph after a remint or merge:
// the store's uid sweep renames the beacon a node names (store
// RewriterNavNodes), and the compiled graph, which the project and
// pathfinding read, must follow.
type navFollower struct {
	s   *nav.Service
	log *slog.Logger
}

func (navFollower) Rename(string, string) {}

func (f navFollower) RenamesDone() {
	if err := f.s.Reload(); err != nil {
		f.log.Error("navigation: graph not recompiled after a uid rename; the next edit does it", "err", err)
	}
}
