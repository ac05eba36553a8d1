package handlers

import (
	"bytes"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"hash/crc32"
	"image"
	"image/jpeg"
	"image/png"
	"io"
	"math"
	"strconv"
	"strings"

	"beaconhub/appliance/apperr"
)

// imageSize reads the pixel size of a sniffed image. A PNG or JPEG whose
// header does not decode is refused (the sniff only saw its magic bytes);
// an SVG gives its size from width/height or its viewBox, or 0 x 0 when it
// states neither (the map body must then say).
func imageSize(contentType string, data []byte) (float64, float64, error) {
	var cfg image.Config
	var err error
	switch contentType {
	case "image/png":
		cfg, err = png.DecodeConfig(bytes.NewReader(data))
	case "image/jpeg":
		cfg, err = jpeg.DecodeConfig(bytes.NewReader(data))
	case "image/svg+xml":
		return svgSize(data)
	default:
		return 0, 0, apperr.Invalid("the map image must be PNG, JPEG or SVG")
	}
	if err != nil || cfg.Width <= 0 || cfg.Height <= 0 {
		return 0, 0, apperr.Invalid("the %s image is damaged: its header does not decode", strings.TrimPrefix(contentType, "image/"))
	}
	return float64(cfg.Width), float64(cfg.Height), nil
}

// maxImageSide bounds an uploaded image's stated size, as the map body's
// width and height are bounded: the size becomes the map's.
const maxImageSide = 100000

// checkUpload is imageSize for a new upload, which must also be whole: a
// PNG or JPEG cut short (an interrupted copy) has a header that decodes
// and would be stored and drawn half grey. The structure is walked to
// its end marker (and a PNG's chunk checksums verified) without decoding
// the pixels, which a 5 MiB file could blow up to gigabytes of.
func checkUpload(contentType string, data []byte) (float64, float64, error) {
	w, h, err := imageSize(contentType, data)
	if err != nil {
		return 0, 0, err
	}
	var whole bool
	switch contentType {
	case "image/png":
		whole = pngWhole(data)
	case "image/jpeg":
		whole = jpegWhole(data)
	default:
		whole = true // svgSize read the whole document
	}
	if !whole {
		return 0, 0, apperr.Invalid("the %s image is damaged or cut short: it does not end as one should", strings.TrimPrefix(contentType, "image/"))
	}
	if w > maxImageSide || h > maxImageSide {
		return 0, 0, apperr.Invalid("the image states %gx%g pixels; at most %d a side", w, h, maxImageSide)
	}
	return w, h, nil
}

// pngWhole walks the chunks after the signature, checking each one's
// CRC, and reports whether IEND is reached.
func pngWhole(data []byte) bool {
	const sig = 8
	for p := sig; p+12 <= len(data); {
		n := int(binary.BigEndian.Uint32(data[p:]))
		if n < 0 || n > len(data)-p-12 {
			return false
		}
		typ := data[p+4 : p+8]
		if crc32.ChecksumIEEE(data[p+4:p+8+n]) != binary.BigEndian.Uint32(data[p+8+n:]) {
			return false
		}
		if string(typ) == "IEND" {
			return true
		}
		p += 12 + n
	}
	return false
}

// jpegWhole walks the marker segments from SOI and each scan's
// entropy-coded data to EOI. Walking, not searching for FF D9, matters:
// an EXIF thumbnail carries an EOI of its own inside APP1.
func jpegWhole(data []byte) bool {
	if len(data) < 4 || data[0] != 0xFF || data[1] != 0xD8 {
		return false
	}
	p := 2
	for p+1 < len(data) {
		if data[p] != 0xFF {
			// Extraneous bytes between segments: a format error that
			// libjpeg and Go's decoder both skip with a warning.
			p++
			continue
		}
		m := data[p+1]
		switch {
		case m == 0xFF: // fill byte before a marker
			p++
			continue
		case m == 0xD9:
			return true
		case m == 0x00 || m == 0x01 || (m >= 0xD0 && m <= 0xD7): // no length
			p += 2
			continue
		}
		if p+4 > len(data) {
			return false
		}
		n := int(binary.BigEndian.Uint16(data[p+2:]))
		if n < 2 || p+2+n > len(data) {
			return false
		}
		p += 2 + n
		if m != 0xDA {
			continue
		}
		// Entropy-coded data runs to the next marker that is neither a
		// stuffed zero nor a restart; 0xFF fill may precede either.
		for p+1 < len(data) {
			if data[p] == 0xFF {
				if n := data[p+1]; n != 0x00 && n != 0xFF && (n < 0xD0 || n > 0xD7) {
					break
				}
			}
			p++
		}
	}
	return false
}

// svgSize reads the size from the root element and checks the whole
// document: a truncated file or mismatched tags would be stored and then
// drawn as a broken floor plan. encoding/xml expands no external
// entities, a DOCTYPE (which could define some) is refused, and so is a
// document whose root is not <svg>.
func svgSize(data []byte) (float64, float64, error) {
	dec := xml.NewDecoder(bytes.NewReader(bytes.TrimPrefix(data, []byte("\ufeff"))))
	dec.Strict = true
	var w, h float64
	root, depth := false, 0
	for {
		tok, err := dec.Token()
		if err == io.EOF && root {
			if w <= 0 || h <= 0 {
				return 0, 0, nil
			}
			return w, h, nil
		}
		if err != nil {
			return 0, 0, apperr.Invalid("the SVG image is not well-formed XML")
		}
		switch t := tok.(type) {
		case xml.Directive:
			// A DTD can define entities; a floor plan needs none.
			return 0, 0, apperr.Invalid("the SVG image may not carry a DOCTYPE")
		case xml.EndElement:
			depth--
		case xml.StartElement:
			depth++
			if depth > 1 {
				continue
			}
			if root {
				return 0, 0, apperr.Invalid("the SVG image is not well-formed XML") // a second root
			}
			if t.Name.Local != "svg" {
				return 0, 0, apperr.Invalid("the SVG image's root element must be <svg>")
			}
			root = true
			w, h = svgRootSize(t.Attr)
		case xml.CharData:
			if depth == 0 && len(bytes.TrimSpace(t)) > 0 {
				return 0, 0, apperr.Invalid("the SVG image is not well-formed XML") // text outside the root
			}
		}
	}
}

// svgRootSize is the size the root's width and height state, else its
// viewBox's, else 0 x 0.
func svgRootSize(attrs []xml.Attr) (float64, float64) {
	var w, h float64
	var vb string
	for _, a := range attrs {
		switch a.Name.Local {
		case "width":
			w = svgLength(a.Value)
		case "height":
			h = svgLength(a.Value)
		case "viewBox":
			vb = a.Value
		}
	}
	if (w <= 0 || h <= 0) && vb != "" {
		f := strings.FieldsFunc(vb, func(r rune) bool { return r == ' ' || r == ',' })
		if len(f) == 4 {
			w, h = svgLength(f[2]), svgLength(f[3])
		}
	}
	return w, h
}

// svgLength reads a plain or px length; anything relative (%, em) is 0.
// A huge one is returned as it is, so that checkUpload refuses it like a
// PNG's, rather than passing as "no size stated".
func svgLength(s string) float64 {
	s = strings.TrimSuffix(strings.TrimSpace(s), "px")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(v) || v <= 0 {
		return 0
	}
	return v // +Inf for an out-of-range one: refused as too large
}
