package eink

import (
	"math"
	"strconv"
)

// appendDecimal appends v rounded to dec decimals with sep as the decimal
// separator.
//
// Rounding rule: half away from zero, applied to the shortest decimal
// string of the value (2.25 -> 2.3, 2.35 -> 2.4, -2.25 -> -2.3), not to
// its binary approximation. Readings are stored as two-decimal values, so
// the string is what the user saw in the sensor list; rounding the binary
// float would turn 2.25 into 2.2 on some values and 2.3 on others.
// A result that rounds to zero is written without a sign ("-0.0" -> "0.0").
func appendDecimal(dst []byte, v float64, dec int, sep byte) []byte {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return append(dst, '-', '-')
	}
	var tmp [64]byte
	s := strconv.AppendFloat(tmp[:0], math.Abs(v), 'f', -1, 64)
	intPart, frac := s, []byte(nil)
	for i, c := range s {
		if c == '.' {
			intPart, frac = s[:i], s[i+1:]
			break
		}
	}
	// digits holds intPart followed by exactly dec fraction digits, with
	// one spare leading byte for a carry out of the integer part.
	var dbuf [96]byte
	digits := append(dbuf[:0], '0')
	digits = append(digits, intPart...)
	for i := 0; i < dec; i++ {
		if i < len(frac) {
			digits = append(digits, frac[i])
		} else {
			digits = append(digits, '0')
		}
	}
	if dec < len(frac) && frac[dec] >= '5' {
		for i := len(digits) - 1; i >= 0; i-- {
			if digits[i] < '9' {
				digits[i]++
				break
			}
			digits[i] = '0'
		}
	}
	if digits[0] == '0' {
		digits = digits[1:]
	}
	zero := true
	for _, c := range digits {
		if c != '0' {
			zero = false
			break
		}
	}
	if v < 0 && !zero {
		dst = append(dst, '-')
	}
	n := len(digits) - dec
	dst = append(dst, digits[:n]...)
	if dec > 0 {
		dst = append(dst, sep)
		dst = append(dst, digits[n:]...)
	}
	return dst
}
