package redistest

import "syscall"

// dieWithParent makes a started redis-server get SIGKILL when the test binary exits without
// calling Stop (a panic, a timeout), so no server outlives the test run.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
