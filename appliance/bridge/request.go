package bridge

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Value is one trapper value for Zabbix: an item key on a host, its value
// as text (Zabbix converts it to the item's type), and when it was taken.
type Value struct {
	Host  string
	Key   string
	Value string
	Clock time.Time
}

// AppendRequest appends the JSON body of a "sender data" request to dst:
//
//	{"request":"sender data","data":[{"host":..,"key":..,"value":..,"clock":..,"ns":..}],"clock":..,"ns":..}
//
// It is hand-written rather than json.Marshal because it runs for every
// value of every round; the benchmark in bench_test.go compares the two.
// now is the request's own timestamp, which lets Zabbix correct the
// values' clocks for skew between the two hosts.
func AppendRequest(dst []byte, values []Value, now time.Time) []byte {
	dst = append(dst, `{"request":"sender data","data":[`...)
	for i, v := range values {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"host":`...)
		dst = appendJSONString(dst, v.Host)
		dst = append(dst, `,"key":`...)
		dst = appendJSONString(dst, v.Key)
		dst = append(dst, `,"value":`...)
		dst = appendJSONString(dst, v.Value)
		dst = appendClock(dst, v.Clock)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	dst = appendClock(dst, now)
	return append(dst, '}')
}

func appendClock(dst []byte, t time.Time) []byte {
	dst = append(dst, `,"clock":`...)
	dst = strconv.AppendInt(dst, t.Unix(), 10)
	dst = append(dst, `,"ns":`...)
	return strconv.AppendInt(dst, int64(t.Nanosecond()), 10)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does, because Zabbix rejects the whole request
// on malformed JSON and one bad name must not cost a batch.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
