//go:build !unix

package fnruntime

import "os/exec"

// ownProcessGroup leaves cmd as it is: off Unix the end of a run kills
// the program only (exec.CommandContext's default), not what it started.
func ownProcessGroup(*exec.Cmd) {}

func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
