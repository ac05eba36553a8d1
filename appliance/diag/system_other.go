//go:build !linux

package diag

// procFigures: the appliance ships for Linux (packaging/); elsewhere
// (a developer's machine) a snapshot carries the Go runtime's figures
// only.
func procFigures(string) procSample { return procSample{} }
