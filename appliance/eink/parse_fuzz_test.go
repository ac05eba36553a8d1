package eink

import (
	"math"
	"strings"
	"testing"
)

func TestParseMAC(t *testing.T) {
	for in, want := range map[string]string{
		"a0b1c2d3e4f5": "A0B1C2D3E4F5", "A0B1C2D3E4F5": "A0B1C2D3E4F5",
		"a0:b1:c2:d3:e4:f5": "", "A0B1C2D3E4F": "", "A0B1C2D3E4F5A": "", "G0B1C2D3E4F5": "", "": "",
	} {
		got, ok := ParseMAC(in)
		if got != want || ok != (want != "") {
			t.Errorf("ParseMAC(%q) = %q, %v", in, got, ok)
		}
	}
}

func FuzzParseMAC(f *testing.F) {
	for _, s := range []string{"a0b1c2d3e4f5", "A0B1C2D3E4F5", "zzzzzzzzzzzz", "", "a0:b1:c2:d3:e4:f5", "é0b1c2d3e4f"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		mac, ok := ParseMAC(s)
		if !ok {
			return
		}
		if len(mac) != 12 || strings.ToUpper(s) != mac || strings.Trim(mac, "0123456789ABCDEF") != "" {
			t.Fatalf("ParseMAC(%q) accepted %q", s, mac)
		}
	})
}

func FuzzParseVoltage(f *testing.F) {
	for _, s := range []string{"3.01", "0", "100", "100.1", "-1", "NaN", "Inf", "1e2", "", "3,01", "0x1p1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseVoltage(s)
		if ok && (math.IsNaN(v) || v < 0 || v > 100) {
			t.Fatalf("ParseVoltage(%q) = %v", s, v)
		}
		if !ok && v != 0 {
			t.Fatalf("refused %q but returned %v", s, v)
		}
	})
}
