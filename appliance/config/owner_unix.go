//go:build unix

package config

import (
	"os"
	"syscall"
)

// keepOwner gives the replacement file the owner of the file it replaces,
// so a root-run command (mobile-key regenerate under sudo) does not leave a
// file the service user can no longer read.
func keepOwner(tmp *os.File, path string) {
	fi, err := os.Stat(path)
	if err != nil {
		return
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = tmp.Chown(int(st.Uid), int(st.Gid))
	}
}
