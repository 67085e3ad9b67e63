//go:build unix

package fnruntime

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts cmd in a process group of its own, which
// cmd.Cancel kills whole when the run's context ends.
func ownProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error {
		killProcessGroup(cmd)
		return nil
	}
}

// killProcessGroup sends SIGKILL to cmd's process group: the program and
// every process it started that did not leave the group.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil || cmd.Process.Pid <= 0 {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
}
