//go:build race

package replay

const raceDetector = true
