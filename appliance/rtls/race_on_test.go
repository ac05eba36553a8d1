//go:build race

package rtls

const raceDetector = true
