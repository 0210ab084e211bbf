//go:build !linux

package redistest

import "syscall"

// dieWithParent is a no-op outside Linux: Stop kills the servers.
func dieWithParent() *syscall.SysProcAttr { return nil }
