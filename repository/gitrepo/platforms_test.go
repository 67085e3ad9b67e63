package gitrepo_test

import (
	"os"
	"os/exec"
	"testing"
)

// The backend builds, and its tests vet, on the platforms without the
// syscalls it uses on linux (madvise, flock, getrusage): there a
// repository on disk is read with ReadAt instead of mmap where mapping is
// missing, and is never written (see package internal/refstore).
func TestBuildsOffLinux(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("go command not on PATH")
		}
		t.Skip("go command not on PATH")
	}
	for _, goos := range []string{"darwin", "windows", "freebsd"} {
		cmd := exec.Command("go", "vet", "github.com/configasdata/cad/repository/...")
		cmd.Env = append(os.Environ(), "GOOS="+goos, "GOARCH=amd64", "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("GOOS=%s go vet ./repository/...: %v\n%s", goos, err, out)
		}
	}
}
