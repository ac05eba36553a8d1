package eink

import (
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"
)

// appendString appends s as a JSON string literal encoded in Windows-1250.
// The displays' firmware decodes only Windows-1250 and no \u escapes, so
// non-ASCII text is written as raw Windows-1250 bytes. The x/text encoder
// would substitute 0x1A for a rune without a mapping; the device contract
// asks for '?', so runes are encoded one at a time. Invalid UTF-8 becomes
// '?' too.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	return append(appendEscaped(dst, s), '"')
}

// appendEscaped is appendString without the quotes.
func appendEscaped(dst []byte, s string) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigit[c>>4], hexDigit[c&0xF])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		b, ok := byte('?'), false
		if r != utf8.RuneError {
			b, ok = charmap.Windows1250.EncodeRune(r)
		}
		if !ok {
			b = '?'
		}
		dst = append(dst, b)
	}
	return dst
}

const hexDigit = "0123456789abcdef"
