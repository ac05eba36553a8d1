package apperr

import (
	"errors"
	"strings"
	"testing"
)

// CleanName trims, counts characters rather than bytes and refuses
// control characters anywhere, C1 and DEL included; the error names the
// field.
func TestCleanName(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"  Ward 3 ", "Ward 3"},
		{strings.Repeat("ž", 10), strings.Repeat("ž", 10)},
		{"Küche–Nord", "Küche–Nord"},
	} {
		got, err := CleanName("name", c.in, 10)
		if err != nil || got != c.want {
			t.Errorf("CleanName(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{"", "   ", strings.Repeat("ž", 11), "\u0000\u0007", "Ward\n3", "Ward\t3", "a\x7fb", "a\u0085b", "\x1b[31mred", "a\u2028b", "a\u2029b"} {
		_, err := CleanName("label", bad, 10)
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindInvalid || e.Field != "label" || !strings.Contains(e.Msg, "label") {
			t.Errorf("CleanName(%q): %v, want a 400 naming the field", bad, err)
		}
	}
}

// MendLine leaves one space where a run of line-breaking characters
// was, none at the start, and text BreaksALine passes unchanged.
func TestMendLine(t *testing.T) {
	for in, want := range map[string]string{
		"Ward\n\t3":       "Ward 3",
		"\x1b[31mred":     "[31mred",
		"a\u2028b\u2029c": "a b c",
		"end\n":           "end",
		"Küche–Nord":      "Küche–Nord",
	} {
		if got := MendLine(in); got != want || BreaksALine(got) {
			t.Errorf("MendLine(%q) = %q, want %q", in, got, want)
		}
	}
}
