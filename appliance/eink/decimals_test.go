package eink

import (
	"encoding/json"
	"testing"
)

func jsonUnmarshalString(b []byte, s *string) error { return json.Unmarshal(b, s) }

// The rule: half away from zero on the shortest decimal string.
func TestAppendDecimal(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		dec  int
		sep  byte
		want string
	}{
		{2.25, 1, '.', "2.3"},
		{2.35, 1, '.', "2.4"},
		{2.45, 1, ',', "2,5"},
		{-2.25, 1, '.', "-2.3"},
		{2.24, 1, '.', "2.2"},
		{4.55, 1, ',', "4,6"},
		{9.95, 1, '.', "10.0"},
		{99.5, 0, '.', "100"},
		{0.5, 0, '.', "1"},
		{-0.5, 0, '.', "-1"},
		{-0.04, 1, '.', "0.0"},
		{3, 2, '.', "3.00"},
		{61.5, 0, '.', "62"},
		{1.005, 2, '.', "1.01"},
		{12.3456, 3, '.', "12.346"},
		{0, 0, '.', "0"},
	} {
		if got := string(appendDecimal(nil, tc.v, tc.dec, tc.sep)); got != tc.want {
			t.Errorf("appendDecimal(%v, %d) = %q, want %q", tc.v, tc.dec, got, tc.want)
		}
	}
}
