package bridge

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
)

func TestAppendFrameLayout(t *testing.T) {
	data := []byte(`{"request":"sender data"}`)
	std := AppendFrame(nil, data, false)
	want := append([]byte("ZBXD\x01"), 25, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(std[:headerLen], want) || !bytes.Equal(std[headerLen:], data) {
		t.Fatalf("standard frame = % x", std)
	}
	large := AppendFrame(nil, data, true)
	wantL := append([]byte("ZBXD\x05"), 25, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
	if !bytes.Equal(large[:largeHeaderLen], wantL) || !bytes.Equal(large[largeHeaderLen:], data) {
		t.Fatalf("large frame = % x", large)
	}
}

func compressed(plain []byte, announce uint32) []byte {
	var z bytes.Buffer
	w := zlib.NewWriter(&z)
	_, _ = w.Write(plain)
	_ = w.Close()
	out := []byte("ZBXD\x03")
	out = binary.LittleEndian.AppendUint32(out, uint32(z.Len()))
	out = binary.LittleEndian.AppendUint32(out, announce)
	return append(out, z.Bytes()...)
}

func TestReadFrame(t *testing.T) {
	reply := []byte(`{"response":"success","info":"processed: 1; failed: 0; total: 1; seconds spent: 0.000055"}`)
	hugeLen := append([]byte("ZBXD\x01"), 0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0)
	hugeLarge := append([]byte("ZBXD\x05"), 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0)
	tests := []struct {
		name    string
		in      []byte
		want    []byte
		wantErr error
	}{
		{"standard", AppendFrame(nil, reply, false), reply, nil},
		{"large packet flag", AppendFrame(nil, reply, true), reply, nil},
		{"empty data", AppendFrame(nil, nil, false), []byte{}, nil},
		{"compressed", compressed(reply, uint32(len(reply))), reply, nil},
		{"compressed, wrong plain length", compressed(reply, uint32(len(reply)+5)), nil, ErrTruncated},
		{"compressed, plain over limit", compressed(reply, MaxReplyLen+1), nil, ErrTooLarge},
		{"truncated data", AppendFrame(nil, reply, false)[:headerLen+10], nil, ErrTruncated},
		{"truncated header", []byte("ZBXD\x01\x10\x00"), nil, ErrTruncated},
		{"truncated large header", []byte("ZBXD\x05\x10\x00\x00\x00\x00\x00\x00\x00"), nil, ErrTruncated},
		{"only magic", []byte("ZBX"), nil, ErrTruncated},
		{"nothing", nil, nil, ErrTruncated},
		{"garbage header", []byte("HTTP/1.1 400 Bad Request\r\n\r\n"), nil, ErrBadMagic},
		{"no standard flag", []byte("ZBXD\x00\x00\x00\x00\x00\x00\x00\x00\x00"), nil, ErrBadFlags},
		{"unknown flag", []byte("ZBXD\x09\x00\x00\x00\x00\x00\x00\x00\x00"), nil, ErrBadFlags},
		{"oversize length", hugeLen, nil, ErrTooLarge},
		{"oversize large length", hugeLarge, nil, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadFrame(bytes.NewReader(tc.in), MaxReplyLen)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, tc.want) {
				t.Fatalf("got %q, %v", got, err)
			}
		})
	}
}

func TestReadFrameCompressedLongerThanAnnounced(t *testing.T) {
	plain := []byte(strings.Repeat("x", 100))
	if _, err := ReadFrame(bytes.NewReader(compressed(plain, 50)), MaxReplyLen); err == nil {
		t.Fatal("accepted compressed data longer than its announced length")
	}
}

// Frames follow each other on a stream: reading one leaves the next.
func TestReadFrameLeavesTheRest(t *testing.T) {
	var buf bytes.Buffer
	buf.Write(AppendFrame(nil, []byte("one"), false))
	buf.Write(AppendFrame(nil, []byte("two"), true))
	for _, want := range []string{"one", "two"} {
		got, err := ReadFrame(&buf, 16)
		if err != nil || string(got) != want {
			t.Fatalf("got %q, %v; want %q", got, err, want)
		}
	}
}
