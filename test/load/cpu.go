package load

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTick is the unit of utime/stime in /proc/<pid>/stat (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// ProcessCPU returns the user+system CPU time process pid has used so far, from
// /proc/<pid>/stat (pid 0: this process). Error: not Linux, or the process is gone.
func ProcessCPU(pid int) (time.Duration, error) {
	path := "/proc/self/stat"
	if pid > 0 {
		path = fmt.Sprintf("/proc/%d/stat", pid)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is parenthesised and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, fmt.Errorf("load: unexpected %s", path)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("load: short %s", path)
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("load: bad utime/stime in %s", path)
	}
	return time.Duration(ut+st) * clockTick, nil
}

// CPUProbe samples the CPU time used so far by named processes (pid 0: this process, the
// load client). Processes that cannot be read are left out.
func CPUProbe(pids map[string]int) func() map[string]time.Duration {
	return func() map[string]time.Duration {
		out := make(map[string]time.Duration, len(pids))
		for name, pid := range pids {
			if d, err := ProcessCPU(pid); err == nil {
				out[name] = d
			}
		}
		return out
	}
}

// cpuDelta is after − before for every name in both.
func cpuDelta(before, after map[string]time.Duration) map[string]time.Duration {
	if before == nil || after == nil {
		return nil
	}
	out := make(map[string]time.Duration, len(after))
	for k, a := range after {
		if b, ok := before[k]; ok {
			out[k] = a - b
		}
	}
	return out
}

// Probe returns a CPUProbe over the fleet's processes and this one: "client", "gateway",
// "prefill", "decode".
func (f *Fleet) Probe() func() map[string]time.Duration {
	return CPUProbe(map[string]int{"client": 0, "gateway": f.Gateway.PID(),
		"prefill": f.Prefill.PID(), "decode": f.Decode.PID()})
}
