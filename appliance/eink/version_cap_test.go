package eink

import "testing"

// A spare whose pending row was deleted (it keeps a version) polls while
// the pending rows are at the cap: it is served the neutral screen at
// kept%99+1 and draws it; nothing records that. Replace-device then puts
// it on an approved row, whose first screen must not carry that number:
// it did, and the device kept "Waiting for approval" on the door instead
// of the patient's name (a review).
func TestCapScreenThenReplaceDeviceIsDrawn(t *testing.T) {
	r := newRig(t)
	// Row A: the broken display's row, approved with a patient's name.
	idA := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 7 - patient Novak"}]}`)
	r.poll(mac1)
	// The spare registered (pending, 1) and its row was deleted: it keeps 2.
	r.poll(mac2Spare)
	r.remove(r.idOf(mac2Spare))
	// The pending rows fill up (a roll-out of displays not yet approved).
	r.fillPending()
	capScreen := r.poll(mac2Spare)
	if r.idOf(mac2Spare) != 0 {
		t.Fatal("setup: the spare registered despite the cap")
	}
	r.replace(idA, mac2Spare)
	first := r.poll(mac2Spare)
	t.Logf("at the cap the spare drew version %d %q; on row A it is served version %d %q", capScreen.Version, texts(capScreen), first.Version, texts(first))
	if first.Version == capScreen.Version {
		t.Errorf("the spare's first screen on row A has version %d, the number it drew at the cap: it keeps %q instead of %q",
			first.Version, texts(capScreen), texts(first))
	}
}

// The same with a brand-new device (keeps nothing): at the cap it draws
// version 1; the row it replaces into is at 99, whose next is 1: the
// replace skips it (a review).
func TestCapScreenOfANewDeviceThenReplaceOntoARowAt99(t *testing.T) {
	r := newRig(t)
	idA := r.approve(mac1, `{"objects":[{"t":0,"x":1,"y":2,"s":"Room 7 - patient Novak"}]}`)
	r.poll(mac1)
	r.setVersion(idA, 99)
	r.fillPending()
	capScreen := r.poll(mac2Spare)
	r.replace(idA, mac2Spare)
	first := r.poll(mac2Spare)
	t.Logf("cap screen version %d; first on row A %d %q", capScreen.Version, first.Version, texts(first))
	if first.Version == capScreen.Version {
		t.Errorf("first screen on row A has version %d, the cap screen's: not drawn", first.Version)
	}
}
