package handlers

import (
	"io"
	"log/slog"
	"net/http/httptest"
	"testing"

	"beaconhub/appliance/config"
)

// The preview check runs before routing on every request. Its cost is
// measured against serving the cheapest route in the same run, so the
// figures are reported as ratios (docs/performance.md).
func BenchmarkPreviewCheck(b *testing.B) {
	srv := New(Deps{Live: config.NewLive(config.Defaults(config.ActiveBrand()), nil, ""), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	plain := httptest.NewRequest("GET", "/api/v1/version", nil)
	withHeader := httptest.NewRequest("GET", "/api/v1/beacon/WAT-A1-1/intervals", nil)
	withHeader.Header.Set(PreviewHeader, "2")
	refused := httptest.NewRequest("POST", "/api/v1/beacon/WAT-A1-1", nil)
	refused.Header.Set(PreviewHeader, "2")
	w := httptest.NewRecorder()
	b.Run("baseline-serve-version", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w.Body.Reset()
			srv.ServeHTTP(w, plain)
		}
	})
	b.Run("check-no-header", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if refusePreview(w, plain) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("check-allowlisted", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if refusePreview(w, withHeader) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("check-refused", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w.Body.Reset()
			if !refusePreview(w, refused) {
				b.Fatal("not refused")
			}
		}
	})
}
