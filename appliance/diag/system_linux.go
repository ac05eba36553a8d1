package diag

import (
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// procFigures reads what the kernel knows of this process and its box.
// Each figure is left out when it cannot be read (a /proc hidden by a
// sandbox), rather than failing the snapshot; its ...OK fields say which
// were read.
func procFigures(home string) (f procSample) {
	if data, err := os.ReadFile("/proc/self/statm"); err == nil {
		// statm: size resident shared ... in pages.
		if fs := strings.Fields(string(data)); len(fs) > 1 {
			if pages, err := strconv.ParseUint(fs[1], 10, 64); err == nil {
				f.rss, f.rssOK = pages*uint64(os.Getpagesize()), true
			}
		}
	}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		f.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		f.cpuOK = true
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		fs := strings.Fields(string(data))
		for i := 0; i < 3 && i < len(fs); i++ {
			if v, err := strconv.ParseFloat(fs[i], 64); err == nil {
				f.load = append(f.load, v)
			}
		}
	}
	var st syscall.Statfs_t
	if home != "" && syscall.Statfs(home, &st) == nil {
		f.diskFree = st.Bavail * uint64(st.Bsize)
		f.diskTotal = st.Blocks * uint64(st.Bsize)
		f.diskOK = true
	}
	return f
}
