package main

import (
	"regexp"
	"strconv"
	"testing"
)

// TestLoadgenOwnProcess: the appliance side runs in a child process that
// reports its own counters and peak memory back to the publishers.
func TestLoadgenOwnProcess(t *testing.T) {
	code, out, errOut := runCLI(t, "loadgen", "--gateways", "3", "--beacons", "40", "--duration", "300ms", "--qos", "0,1", "--baseline=false")
	if code != 0 {
		t.Fatalf("loadgen: exit %d\n%s\n%s", code, out, errOut)
	}
	rows := regexp.MustCompile(`(?m)^beaconhub-full-proc\s+([01])\s+(\d+)\s.*\s(\d+)MB$`).FindAllStringSubmatch(out, -1)
	if len(rows) != 2 {
		t.Fatalf("want one own-process row per QoS:\n%s\n%s", out, errOut)
	}
	for _, r := range rows {
		rate, _ := strconv.Atoi(r[2])
		rss, _ := strconv.Atoi(r[3])
		if rate <= 0 || rss <= 0 {
			t.Errorf("QoS %s: rate %d, peak RSS %d MB:\n%s", r[1], rate, rss, out)
		}
	}
}
