package eink

import (
	"testing"

	"golang.org/x/text/encoding/charmap"
)

func TestAppendStringWindows1250(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"czech", "Teplota v kuchyni: 4,6 °C, žluťoučký kůň úpěl ďábelské ódy", "Teplota v kuchyni: 4,6 °C, žluťoučký kůň úpěl ďábelské ódy"},
		{"polish", "Łódź, zażółć gęślą jaźń", "Łódź, zażółć gęślą jaźń"},
		{"german", "Größe, Übermaß, Äpfel", "Größe, Übermaß, Äpfel"},
		{"emoji", "cold 🧊 fridge", "cold ? fridge"},
		{"unmappable CJK", "温度", "??"},
		{"invalid utf-8", "a\xffb", "a?b"},
		{"json escapes", "a\"b\\c\nd", "a\"b\\c\nd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := appendString(nil, tc.in)
			for _, b := range raw {
				if b == 0x1A {
					t.Fatalf("%q contains 0x1A", raw)
				}
			}
			utf, err := charmap.Windows1250.NewDecoder().Bytes(raw)
			if err != nil {
				t.Fatal(err)
			}
			var got string
			if err := jsonUnmarshalString(utf, &got); err != nil {
				t.Fatalf("%q: %v", utf, err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	// The encoding is single-byte: ł is 0xB3 in Windows-1250.
	if raw := appendString(nil, "ł"); string(raw) != "\"\xb3\"" {
		t.Errorf("ł encoded as % x", raw)
	}
}
