// Package bridge feeds a Zabbix monitoring server: it fetches the
// low-level-discovery lists of beacons and gateways from the main server,
// sends them to Zabbix as discovery values, then sends per-asset values
// periodically, over Zabbix's sender (trapper) protocol. It owns that
// protocol's codec (frame.go, request.go, reply.go), the client
// (sender.go), the main-server fetch (source.go) and the loop (bridge.go).
package bridge

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame flags of the Zabbix protocol header.
const (
	FlagStandard   byte = 0x01 // always set
	FlagCompressed byte = 0x02 // data is zlib; reserved holds the plain length
	FlagLarge      byte = 0x04 // lengths are 8 bytes instead of 4
)

// magic opens every frame.
var magic = [4]byte{'Z', 'B', 'X', 'D'}

// Header sizes: magic + flags + two lengths of 4 (standard) or 8 (large)
// bytes.
const (
	headerLen      = 4 + 1 + 4 + 4
	largeHeaderLen = 4 + 1 + 8 + 8
)

// MaxReplyLen bounds what the decoder accepts: a sender reply is one short
// JSON object, so a length beyond this is garbage or hostile, never a
// reason to allocate.
const MaxReplyLen = 1 << 20

// Decoding errors, distinguishable so the loop can log what went wrong.
var (
	ErrBadMagic  = errors.New("zabbix frame: bad header")
	ErrTruncated = errors.New("zabbix frame: truncated")
	ErrTooLarge  = errors.New("zabbix frame: length over limit")
	ErrBadFlags  = errors.New("zabbix frame: unsupported flags")
)

// AppendFrame appends a frame carrying data to dst. large selects 8-byte
// lengths (FlagLarge); the sender uses the standard header, whose 4-byte
// length covers every batch it builds, and never compresses.
func AppendFrame(dst, data []byte, large bool) []byte {
	dst = append(dst, magic[:]...)
	if large {
		dst = append(dst, FlagStandard|FlagLarge)
		dst = binary.LittleEndian.AppendUint64(dst, uint64(len(data)))
		dst = binary.LittleEndian.AppendUint64(dst, 0)
	} else {
		dst = append(dst, FlagStandard)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(len(data)))
		dst = binary.LittleEndian.AppendUint32(dst, 0)
	}
	return append(dst, data...)
}

// ReadFrame reads one frame from r and returns its data, decompressed when
// the frame says so. Neither the declared length nor the declared
// uncompressed length may exceed limit.
func ReadFrame(r io.Reader, limit int) ([]byte, error) {
	var h [largeHeaderLen]byte
	if _, err := io.ReadFull(r, h[:5]); err != nil {
		return nil, truncated(err)
	}
	if !bytes.Equal(h[:4], magic[:]) {
		return nil, ErrBadMagic
	}
	flags := h[4]
	if flags&FlagStandard == 0 || flags&^(FlagStandard|FlagCompressed|FlagLarge) != 0 {
		return nil, fmt.Errorf("%w: 0x%02x", ErrBadFlags, flags)
	}
	var n, reserved uint64
	if flags&FlagLarge != 0 {
		if _, err := io.ReadFull(r, h[5:largeHeaderLen]); err != nil {
			return nil, truncated(err)
		}
		n = binary.LittleEndian.Uint64(h[5:13])
		reserved = binary.LittleEndian.Uint64(h[13:21])
	} else {
		if _, err := io.ReadFull(r, h[5:headerLen]); err != nil {
			return nil, truncated(err)
		}
		n = uint64(binary.LittleEndian.Uint32(h[5:9]))
		reserved = uint64(binary.LittleEndian.Uint32(h[9:13]))
	}
	if n > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes", ErrTooLarge, n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, truncated(err)
	}
	if flags&FlagCompressed == 0 {
		return data, nil
	}
	return inflate(data, reserved, limit)
}

// inflate undoes zlib compression; the header's reserved field announces
// the plain size, which must match and stay under limit.
func inflate(data []byte, plain uint64, limit int) ([]byte, error) {
	if plain > uint64(limit) {
		return nil, fmt.Errorf("%w: %d bytes uncompressed", ErrTooLarge, plain)
	}
	zr, err := zlib.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("zabbix frame: compressed data: %w", err)
	}
	defer zr.Close()
	out := make([]byte, plain)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("zabbix frame: compressed data: %w", truncated(err))
	}
	// More plain bytes than announced is a corrupt frame, not a reply.
	if n, _ := zr.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("zabbix frame: compressed data longer than announced")
	}
	return out, nil
}

func truncated(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return ErrTruncated
	}
	return err
}
