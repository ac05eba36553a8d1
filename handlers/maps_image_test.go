package handlers

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
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
