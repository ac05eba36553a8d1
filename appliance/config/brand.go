package config

// Brand is a build-time product profile. The active brand is chosen with
// `make build BRAND=name`, which sets BrandName through -ldflags; every
// brand-derived default comes from here so that a fresh deployment matches
// what the frontend build was made with.
type Brand struct {
	Name            string
	Product         string
	Company         string
	BinaryName      string
	AdminEmail      string
	Features        []string
	AuthIssuer      string
	AuthAudience    string
	UpdateServerURL string
	PushServerURL   string
}

// BrandName is set at link time: -X beaconhub/appliance/config.BrandName=acme.
var BrandName = "neutral"

var brands = map[string]Brand{
	"neutral": {
		Name:            "neutral",
		Product:         "BeaconHub",
		Company:         "BeaconHub",
		BinaryName:      "beaconhub",
		AdminEmail:      "admin@beaconhub.local",
		Features:        []string{"bridge", "service"},
		AuthIssuer:      "https://auth.beaconhub.local",
		AuthAudience:    "https://auth.beaconhub.local",
		UpdateServerURL: "",
		PushServerURL:   "https://push.beaconhub.local",
	},
	// A sample vendor profile: shows what a brand overrides, and is what the
	// brand test builds with.
	"acme": {
		Name:            "acme",
		Product:         "Acme Locate",
		Company:         "Acme Care Systems",
		BinaryName:      "acmelocate",
		AdminEmail:      "admin@acme.example",
		Features:        []string{"service"},
		AuthIssuer:      "https://auth.acme.example",
		AuthAudience:    "https://auth.acme.example",
		UpdateServerURL: "https://updates.acme.example",
		PushServerURL:   "https://push.acme.example",
	},
}

// ActiveBrand returns the brand selected at build time, falling back to the
// neutral profile when the linker flag names an unknown brand.
func ActiveBrand() Brand {
	if b, ok := brands[BrandName]; ok {
		return b
	}
	return brands["neutral"]
}

// BrandNames lists the known brand profiles.
func BrandNames() []string {
	out := make([]string, 0, len(brands))
	for n := range brands {
		out = append(out, n)
	}
	return out
}
