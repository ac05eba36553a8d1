package handlers

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func jpegOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for x := range w {
		img.Set(x, x%h, color.RGBA{R: uint8(x), G: 90, B: 200, A: 255})
	}
	var b bytes.Buffer
	if err := jpeg.Encode(&b, img, &jpeg.Options{Quality: 80}); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withThumbnail puts a whole JPEG (with its own EOI) into an APP1
// segment right after SOI, as an EXIF thumbnail sits.
func withThumbnail(main, thumb []byte) []byte {
	app1 := []byte{0xFF, 0xE1, 0, 0}
	binary.BigEndian.PutUint16(app1[2:], uint16(2+len(thumb)))
	out := append([]byte{}, main[:2]...)
	out = append(out, app1...)
	out = append(out, thumb...)
	return append(out, main[2:]...)
}

// TestUploadMustBeWhole: a PNG or JPEG whose header decodes but which
// is cut short, or whose chunk is corrupt, is refused at upload; a
// whole one, with an EXIF-like thumbnail too, is taken; a stated size
// beyond 100000 pixels a side is refused.
func TestUploadMustBeWhole(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	p := pngOf(t, 300, 200)
	j := jpegOf(t, 640, 480)
	thumbed := withThumbnail(j, jpegOf(t, 16, 16))
	for name, good := range map[string][]byte{"png": p, "jpeg": j, "jpeg with a thumbnail": thumbed} {
		if r := h.upload("plan", good); r.Code != http.StatusCreated {
			t.Errorf("whole %s: %d %s", name, r.Code, r.Body)
		}
	}
	corrupt := bytes.Clone(p)
	corrupt[len(corrupt)-20] ^= 0x55 // inside IDAT: its CRC no longer holds
	huge := bytes.Clone(p)
	binary.BigEndian.PutUint32(huge[16:], 200000) // IHDR width, CRC redone
	binary.BigEndian.PutUint32(huge[29:], crc32.ChecksumIEEE(huge[12:29]))
	for name, bad := range map[string][]byte{
		"png header only":              p[:33],
		"png without its IEND":         p[:len(p)-12],
		"png cut by a byte":            p[:len(p)-1],
		"png with a corrupt chunk":     corrupt,
		"png 200000 pixels wide":       huge,
		"jpeg, first 400 bytes":        j[:400],
		"jpeg without its EOI":         j[:len(j)-2],
		"jpeg cut, thumbnail's EOI in": thumbed[:len(thumbed)-100],
		// Refused like a PNG stating that size, not taken as "no size".
		"svg 2000000 pixels wide": []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="2000000" height="20"/>`),
		"svg of infinite width":   []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1e400" height="20"/>`),
		"svg viewBox too large":   []byte(`<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 5000000 10"/>`),
	} {
		if r := h.upload("plan", bad); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, r.Code, r.Body)
		}
	}
}

// TestJPEGWholeAgreesWithDecoder: the upload's end-marker walk takes
// every JPEG that Go's decoder takes, including the legal oddities a
// fresh encoder never writes (fill bytes before a marker, extraneous
// bytes between segments, restart intervals), and refuses the same
// files cut short. The samples are Go's own decoder test images.
func TestJPEGWholeAgreesWithDecoder(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(goroot)), "src", "image", "testdata")
	files, _ := filepath.Glob(filepath.Join(dir, "*.jpeg"))
	if len(files) < 10 {
		t.Fatalf("found %d JPEG samples under %s; the Go installation should carry them", len(files), dir)
	}
	restarts := 0
	for _, f := range files {
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		scan := bytes.Index(orig, []byte{0xFF, 0xDA})
		if bytes.Contains(orig[scan:], []byte{0xFF, 0xD0}) {
			restarts++
		}
		variants := map[string][]byte{
			"as is": orig,
			// 0xFF fill before every restart marker and before EOI.
			"filled": fillBeforeMarkers(orig, scan),
			// Bytes that are no marker between SOI's first segment and the next.
			"stray bytes": strayAfterFirstSegment(orig),
			"cut":         orig[:len(orig)*2/3],
			"no EOI":      orig[:len(orig)-2],
		}
		for name, data := range variants {
			_, decErr := jpeg.Decode(bytes.NewReader(data))
			want := decErr == nil
			if name == "filled" || name == "stray bytes" {
				if decErr != nil && !strings.Contains(f, "truncated") {
					t.Fatalf("%s %s: the decoder refuses the crafted variant (%v): the test is wrong", filepath.Base(f), name, decErr)
				}
			}
			if got := jpegWhole(data); got != want {
				t.Errorf("%s, %s: jpegWhole = %v, decoder error %v", filepath.Base(f), name, got, decErr)
			}
		}
	}
	if restarts == 0 {
		t.Fatal("no sample carries restart markers; the fill case is not exercised")
	}
}

func fillBeforeMarkers(b []byte, scan int) []byte {
	out := append([]byte{}, b[:scan+2]...)
	for i := scan + 2; i < len(b); i++ {
		if b[i] == 0xFF && i+1 < len(b) && (b[i+1] >= 0xD0 && b[i+1] <= 0xD7 || b[i+1] == 0xD9) {
			out = append(out, 0xFF, 0xFF)
		}
		out = append(out, b[i])
	}
	return out
}

func strayAfterFirstSegment(b []byte) []byte {
	n := int(binary.BigEndian.Uint16(b[4:]))
	at := 4 + n
	out := append([]byte{}, b[:at]...)
	out = append(out, 0x00, 0x17, 0x42)
	return append(out, b[at:]...)
}

// pngChunks splits a PNG after its signature into whole chunks (length,
// type, body, CRC); pngJoin puts them back, with each CRC redone.
func pngChunks(b []byte) [][]byte {
	var out [][]byte
	for p := 8; p+12 <= len(b); {
		n := int(binary.BigEndian.Uint32(b[p:]))
		if p+12+n > len(b) {
			break
		}
		out = append(out, b[p:p+12+n])
		p += 12 + n
	}
	return out
}

func pngJoin(sig []byte, chunks [][]byte) []byte {
	out := append([]byte{}, sig[:8]...)
	for _, c := range chunks {
		c = bytes.Clone(c)
		binary.BigEndian.PutUint32(c[len(c)-4:], crc32.ChecksumIEEE(c[4:len(c)-4]))
		out = append(out, c...)
	}
	return out
}

// TestPNGWholeAgreesWithDecoder: the upload's PNG check (chunks, then the
// image data inflated and counted, never decoded) takes every PNG that
// Go's decoder takes, interlaced and at every bit depth and colour type,
// and refuses what it refuses: a file cut short, one with no image data
// (checksums alone passed it, a review), or with image data that is not
// a zlib stream or holds too few rows. The samples are Go's own.
func TestPNGWholeAgreesWithDecoder(t *testing.T) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(goroot))
	var files []string
	for _, g := range []string{"image/png/testdata/pngsuite/*.png", "image/png/testdata/*.png", "image/testdata/*.png"} {
		f, _ := filepath.Glob(filepath.Join(root, "src", g))
		files = append(files, f...)
	}
	if len(files) < 40 {
		t.Fatalf("found %d PNG samples under %s; the Go installation should carry them", len(files), root)
	}
	interlaced := 0
	for _, f := range files {
		if strings.Contains(f, "invalid-palette") {
			continue // whole, with a palette index out of range: not the check's business
		}
		orig, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		chunks := pngChunks(orig)
		var noData, garbage, short [][]byte
		for _, c := range chunks {
			switch string(c[4:8]) {
			case "IHDR":
				if c[8+12] == 1 {
					interlaced++
				}
			case "IDAT":
				g := bytes.Clone(c)
				copy(g[8:len(g)-4], bytes.Repeat([]byte("not zlib "), len(g)))
				garbage = append(garbage, g)
				if len(short) == 0 || string(short[len(short)-1][4:8]) != "IDAT" {
					short = append(short, c) // the first IDAT of the run only
				}
				continue
			}
			noData, garbage = append(noData, c), append(garbage, c)
			if len(short) == 0 || string(short[len(short)-1][4:8]) != "IDAT" || string(c[4:8]) == "IEND" {
				short = append(short, c)
			}
		}
		variants := map[string][]byte{
			"as is":        orig,
			"cut":          orig[:len(orig)*2/3],
			"no IDAT":      pngJoin(orig, noData),
			"garbage IDAT": pngJoin(orig, garbage),
		}
		if n := bytes.Count(orig, []byte("IDAT")); n > 1 {
			variants["first IDAT only"] = pngJoin(orig, short)
		}
		for name, data := range variants {
			_, decErr := png.Decode(bytes.NewReader(data))
			if got := pngWhole(data); got != (decErr == nil) {
				t.Errorf("%s, %s: pngWhole = %v, decoder error %v", filepath.Base(f), name, got, decErr)
			}
		}
	}
	if interlaced == 0 {
		t.Fatal("no sample is interlaced; Adam7's row count is not exercised")
	}
}

// TestUploadBoundsWhatClientsDraw: the server never decodes an upload's
// pixels, but the tracking canvas and the phones do, so a PNG or JPEG
// stating more than 50 megapixels is refused (a 291 KB PNG stating
// 50000 x 50000 was taken, a review), as is an SVG nesting more than 256
// elements deep (checking a 5 MiB one took 175 MB). A size under one
// pixel is no size: an SVG stating one passes as stating none, and a map
// body giving one is refused, as its message says.
func TestUploadBoundsWhatClientsDraw(t *testing.T) {
	h := newRTLSHarness(t, WSOptions{})
	bigPNG := bytes.Clone(pngOf(t, 300, 200))
	binary.BigEndian.PutUint32(bigPNG[16:], 50000)
	binary.BigEndian.PutUint32(bigPNG[20:], 50000)
	binary.BigEndian.PutUint32(bigPNG[29:], crc32.ChecksumIEEE(bigPNG[12:29]))
	bigJPEG := bytes.Clone(jpegOf(t, 64, 48))
	sof := bytes.Index(bigJPEG, []byte{0xFF, 0xC0})
	binary.BigEndian.PutUint16(bigJPEG[sof+5:], 65535) // height
	binary.BigEndian.PutUint16(bigJPEG[sof+7:], 65535) // width
	nested := func(n int) []byte {
		return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10">` +
			strings.Repeat("<g>", n-1) + strings.Repeat("</g>", n-1) + `</svg>`)
	}
	for name, c := range map[string]struct {
		data []byte
		code int
		says string
	}{
		"png stating 50000 x 50000":  {bigPNG, http.StatusBadRequest, "megapixels"},
		"jpeg stating 65535 x 65535": {bigJPEG, http.StatusBadRequest, "megapixels"},
		"svg 257 deep":               {nested(257), http.StatusBadRequest, "256 deep"},
		"svg 256 deep":               {nested(256), http.StatusCreated, ""},
		"svg 100000 x 100000":        {[]byte(`<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>`), http.StatusCreated, ""},
	} {
		r := h.upload("plan", c.data)
		if r.Code != c.code || !strings.Contains(r.Body, c.says) {
			t.Errorf("%s: %d %s, want %d saying %q", name, r.Code, r.Body, c.code, c.says)
		}
	}
	var up uploaded
	h.upload("plan.svg", []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="0.5" height="0.5"/>`)).
		expect(t, http.StatusCreated).decodePayload(t, &up)
	if up.Width != 0 || up.Height != 0 {
		t.Fatalf("an SVG of half a pixel: %+v, want no size stated", up)
	}
	for _, c := range []struct {
		size any
		code int
	}{{nil, http.StatusBadRequest}, {0.5, http.StatusBadRequest}, {1, http.StatusCreated}} {
		body := map[string]any{"name": "Tiny", "image_id": up.ImageID}
		if c.size != nil {
			body["width"], body["height"] = c.size, c.size
		}
		if r := h.send("POST", "/api/v1/maps", h.admin, body); r.Code != c.code {
			t.Errorf("a map %v pixels a side: %d %s, want %d", c.size, r.Code, r.Body, c.code)
		}
	}
}
