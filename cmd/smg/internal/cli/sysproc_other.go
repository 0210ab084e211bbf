//go:build !linux

package cli

import (
	"os"
	"syscall"
)

func simProcAttr() *syscall.SysProcAttr { return nil }

func signalGroup(pid int, sig syscall.Signal) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Signal(sig)
}
