//go:build linux

package cli

import "syscall"

// simProcAttr puts a simulator in its own process group (so a terminal's Ctrl-C reaches only
// smg, which then stops the fleet in order) and has the kernel kill it if smg itself dies.
func simProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// signalGroup sends sig to the simulator's process group.
func signalGroup(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }
