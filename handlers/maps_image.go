package handlers

import (
	"bytes"
	"compress/zlib"
	"context"
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

// maxImagePixels bounds a PNG's or JPEG's area. The server never decodes
// the pixels, but every client that draws the plan does: a 5 MiB file can
// state 50000 x 50000 (7.5 GB of RGB) and take down the tracking canvas
// or a phone. 50 megapixels is an A0 plan at about 200 dpi. An SVG is
// drawn at the size the client shows it, so only its sides are bounded.
const maxImagePixels = 50_000_000

// maxSVGDepth bounds an SVG's element nesting. The decoder keeps every
// open element, so a 5 MiB document of nested <g> took 175 MB to check
// (a review); floor plans nest a few dozen deep.
const maxSVGDepth = 256

// uploadChecks bounds how many uploads are checked at once: an SVG's
// check takes about ten times its size in memory, and eight 5 MiB ones
// in parallel held 1.3 GB (a review).
var uploadChecks = make(chan struct{}, 2)

// checkUpload is imageSize for a new upload, which must also be whole: a
// PNG or JPEG cut short (an interrupted copy) has a header that decodes
// and would be stored and drawn half grey. A JPEG's structure is walked
// to its end marker; a PNG's chunks are checked and its image data
// inflated (pngWhole), not decoded into pixels.
func checkUpload(ctx context.Context, contentType string, data []byte) (float64, float64, error) {
	select {
	case uploadChecks <- struct{}{}:
		defer func() { <-uploadChecks }()
	case <-ctx.Done(): // the client went: its body need not wait its turn
		// Its own doing, answered to nobody: not a server error in the
		// log (a review).
		return 0, 0, apperr.Invalid("the upload was abandoned while it waited to be checked")
	}
	w, h, err := imageSize(contentType, data)
	if err != nil {
		return 0, 0, err
	}
	if w > maxImageSide || h > maxImageSide {
		return 0, 0, apperr.Invalid("the image states %gx%g pixels; at most %d a side", w, h, maxImageSide)
	}
	if contentType != "image/svg+xml" && w*h > maxImagePixels {
		return 0, 0, apperr.Invalid("the image states %gx%g pixels, %.0f megapixels; at most %d (export the plan at a lower resolution, or as SVG)", w, h, w*h/1e6, maxImagePixels/1_000_000)
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
	return w, h, nil
}

// pngWhole checks a PNG's chunks (each one's CRC, IHDR first, one run of
// IDAT, IEND last) and inflates the image data to its end, counting the
// bytes against the size IHDR states. Checksums alone passed a file with
// no image data at all, or with bytes that are not a zlib stream, both
// drawn as nothing by every decoder (a review). The pixels are inflated
// into nothing, never decoded: checkUpload has bounded their number.
func pngWhole(data []byte) bool {
	const sig = 8
	var ihdr []byte
	var idat [][]byte
	idatEnded := false
	for p, first := sig, true; p+12 <= len(data); first = false {
		n := int(binary.BigEndian.Uint32(data[p:]))
		if n < 0 || n > len(data)-p-12 {
			return false
		}
		typ, body := string(data[p+4:p+8]), data[p+8:p+8+n]
		if crc32.ChecksumIEEE(data[p+4:p+8+n]) != binary.BigEndian.Uint32(data[p+8+n:]) {
			return false
		}
		switch {
		case first != (typ == "IHDR"):
			return false
		case typ == "IHDR":
			ihdr = body
		case typ == "IDAT":
			if idatEnded {
				return false
			}
			idat = append(idat, body)
		case len(idat) > 0:
			idatEnded = true
		}
		if typ == "IEND" {
			return len(idat) > 0 && pngDataWhole(ihdr, idat)
		}
		p += 12 + n
	}
	return false
}

// pngDataWhole inflates the IDAT stream and reports whether it holds
// every scanline IHDR promises (a filter byte and the packed samples per
// row, per Adam7 pass when interlaced). Data past that, which libpng
// reads with a warning, is not read.
func pngDataWhole(ihdr []byte, idat [][]byte) bool {
	if len(ihdr) != 13 {
		return false
	}
	w := int64(binary.BigEndian.Uint32(ihdr[0:]))
	h := int64(binary.BigEndian.Uint32(ihdr[4:]))
	depth, color, interlace := int64(ihdr[8]), ihdr[9], ihdr[12]
	samples := map[byte]int64{0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[color]
	if samples == 0 || depth == 0 || interlace > 1 {
		return false
	}
	bits := samples * depth
	rows := func(w, h int64) int64 {
		if w == 0 || h == 0 {
			return 0
		}
		return h * (1 + (w*bits+7)/8)
	}
	want := rows(w, h)
	if interlace == 1 {
		want = 0
		for _, a := range [7][4]int64{{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4}, {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}} {
			want += rows((w-a[0]+a[2]-1)/a[2], (h-a[1]+a[3]-1)/a[3])
		}
	}
	rs := make([]io.Reader, len(idat))
	for i, b := range idat {
		rs[i] = bytes.NewReader(b)
	}
	zr, err := zlib.NewReader(io.MultiReader(rs...))
	if err != nil {
		return false
	}
	n, err := io.Copy(io.Discard, io.LimitReader(zr, want))
	if err != nil || n != want {
		return false
	}
	// The stream's end, if it ends here, checks its Adler-32.
	_, err = zr.Read(make([]byte, 1))
	return err == nil || err == io.EOF
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

// svgNamespace is the namespace an SVG document's root must be in.
const svgNamespace = "http://www.w3.org/2000/svg"

// svgSize reads the size from the root element and checks the whole
// document: a truncated file or mismatched tags would be stored and then
// drawn as a broken floor plan. encoding/xml expands no external
// entities, a DOCTYPE (which could define some) is refused, and so is a
// document whose root is not an <svg> in the SVG namespace.
func svgSize(data []byte) (float64, float64, error) {
	dec := svgDecoder(data)
	dec.Strict = true
	var w, h float64
	root, depth, ntok := false, 0, 0
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
		first := ntok == 0
		ntok++
		switch t := tok.(type) {
		case xml.ProcInst:
			// The declaration comes first or not at all (XML 1.0, 2.8):
			// browsers refuse the document otherwise, and each one
			// after it would name an encoding again (svgDecoder).
			if strings.EqualFold(t.Target, "xml") && !first {
				return 0, 0, apperr.Invalid("the SVG image is not well-formed XML: an XML declaration that is not its first")
			}
		case xml.Directive:
			// A DTD can define entities; a floor plan needs none.
			return 0, 0, apperr.Invalid("the SVG image may not carry a DOCTYPE")
		case xml.EndElement:
			depth--
		case xml.StartElement:
			depth++
			if depth > maxSVGDepth {
				return 0, 0, apperr.Invalid("the SVG image nests elements more than %d deep", maxSVGDepth)
			}
			if depth > 1 {
				continue
			}
			if root {
				return 0, 0, apperr.Invalid("the SVG image is not well-formed XML") // a second root
			}
			if t.Name.Local != "svg" {
				return 0, 0, apperr.Invalid("the SVG image's root element must be <svg>")
			}
			// A browser draws no SVG outside its namespace: without
			// xmlns the plan is stored and shown blank, and an <svg>
			// in another namespace (XHTML) is no image at all (a review).
			if t.Name.Space != svgNamespace {
				return 0, 0, apperr.Invalid("the SVG image's root element must be in the SVG namespace (xmlns=\"%s\")", svgNamespace)
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
	if err != nil && !errors.Is(err, strconv.ErrRange) || math.IsNaN(v) || v < 1 {
		// Under a pixel is no size to place anything on: as if unstated,
		// so the map body must give one.
		return 0
	}
	return v // +Inf for an out-of-range one: refused as too large
}
