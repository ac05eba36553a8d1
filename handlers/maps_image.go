package handlers

import (
	"bytes"
	"encoding/xml"
	"image"
	"image/jpeg"
	"image/png"
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

// svgSize parses the root element only. encoding/xml expands no external
// entities, and a document whose root is not <svg> is refused.
func svgSize(data []byte) (float64, float64, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	dec.Strict = true
	for {
		tok, err := dec.Token()
		if err != nil {
			return 0, 0, apperr.Invalid("the SVG image is not well-formed XML")
		}
		switch t := tok.(type) {
		case xml.Directive:
			// A DTD can define entities; a floor plan needs none.
			return 0, 0, apperr.Invalid("the SVG image may not carry a DOCTYPE")
		case xml.StartElement:
			if t.Name.Local != "svg" {
				return 0, 0, apperr.Invalid("the SVG image's root element must be <svg>")
			}
			var w, h float64
			var vb string
			for _, a := range t.Attr {
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
			if w <= 0 || h <= 0 {
				return 0, 0, nil
			}
			return w, h, nil
		}
	}
}

// svgLength reads a plain or px length; anything relative (%, em) is 0.
func svgLength(s string) float64 {
	s = strings.TrimSuffix(strings.TrimSpace(s), "px")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v <= 0 || v > 1e6 {
		return 0
	}
	return v
}
