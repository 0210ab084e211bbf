//go:build linux

package load

import "syscall"

// procAttr puts a child in its own process group (a terminal's Ctrl-C reaches only the
// benchmark, which stops its fleet in order) and has the kernel kill it if the benchmark
// process dies.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the child's process group.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
