package eink

import "beaconhub/store"

// neutral is the screen of a display that may not show its layout: the
// product name and the MAC, so that an installer standing in front of it
// can find it in the admin list, and a line saying why. A blocked display
// gets a long validity so that it polls rarely. Every value is a constant
// or the display's own, so the change hash only moves when the state or
// canvas does.
func (s *Service) neutral(d *store.EInkDisplay) screen {
	validity, status := pendingValidity, "Waiting for approval"
	if d.State == store.EInkBlocked {
		validity, status = blockedValidity, "Blocked"
	}
	w, h := d.Width, d.Height
	if w <= 0 || h <= 0 {
		w, h = DefaultWidth, DefaultHeight
	}
	return screen{validity: validity, rotation: d.Rotation, width: w, height: h, layout: &Layout{Objects: []Object{
		text(20, 60, 5, s.product),
		text(20, 120, 3, "MAC "+d.MAC),
		text(20, 170, 3, status),
	}}}
}

func text(x, y, f int, s string) Object {
	black := 1
	return Object{T: 0, X: &x, Y: &y, F: &f, C: &black, S: &s}
}
