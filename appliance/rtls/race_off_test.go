//go:build !race

package rtls

const raceDetector = false
