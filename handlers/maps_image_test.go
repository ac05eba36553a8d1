package handlers

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"net/http"
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
	} {
		if r := h.upload("plan", bad); r.Code != http.StatusBadRequest {
			t.Errorf("%s: %d %s, want 400", name, r.Code, r.Body)
		}
	}
}
