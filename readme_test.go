package cad_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/configasdata/cad"
	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/revision"
)

// readmeProgram returns the Go block under README.md's "A first program
// in Go" heading.
func readmeProgram(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## A first program in Go\n")
	if i < 0 {
		t.Fatal(`README.md has no "## A first program in Go" section`)
	}
	s = s[i:]
	if j := strings.Index(s[1:], "\n## "); j >= 0 {
		s = s[:j+1]
	}
	const open, closing = "\n```go\n", "\n```\n"
	i = strings.Index(s, open)
	if i < 0 {
		t.Fatal("README.md's first program has no ```go block")
	}
	s = s[i+len(open):]
	j := strings.Index(s, closing)
	if j < 0 {
		t.Fatal("README.md's first program's ```go block is not closed")
	}
	return s[:j+1]
}

// TestREADMEProgram builds README.md's first program in a new module of
// its own, as a user pasting it into a fresh directory would (the library
// through a replace of this checkout, the modules from the local module
// cache, no go.work), runs it and checks what it prints.
func TestREADMEProgram(t *testing.T) {
	prog := readmeProgram(t)
	if !strings.HasPrefix(prog, "package main\n") {
		t.Fatalf("README.md's first program is not a whole program:\n%s", prog)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to build README.md's program: %v", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module hello\n\ngo 1.26.0\n\nrequire github.com/configasdata/cad v0.0.0\n\nreplace github.com/configasdata/cad => " + root + "\n"
	sum, err := os.ReadFile("go.sum")
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"go.mod": []byte(gomod), "go.sum": sum, "main.go": []byte(prog)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	run := func(name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		// -mod=mod fills in the new module's requirements from the
		// library's; GOPROXY=off keeps it to the module cache.
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOPROXY=off")
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out.String(), errOut.String())
		}
		return out.String()
	}
	bin := filepath.Join(dir, "hello")
	run(goBin, "build", "-o", bin, ".")
	if got, want := run(bin), "blueprints:apps/hello@v1/v1\n"; got != want {
		t.Fatalf("README.md's program printed %q, want %q", got, want)
	}
}

// TestREADMETestCommandIsCI checks that .ci/run runs exactly the test
// command README.md gives, timeout included.
func TestREADMETestCommandIsCI(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	ci, err := os.ReadFile(filepath.Join(".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	var cmd string
	for line := range strings.Lines(string(readme)) {
		if strings.HasPrefix(line, "go test ") {
			cmd, _, _ = strings.Cut(strings.TrimSpace(line), "  #")
			break
		}
	}
	if cmd == "" || !strings.Contains(cmd, " -timeout ") {
		t.Fatalf("README.md's test command %q has no -timeout", cmd)
	}
	for line := range strings.Lines(string(ci)) {
		if strings.TrimSpace(line) == cmd {
			return
		}
	}
	t.Fatalf(".ci/run does not run README.md's test command %q", cmd)
}

// TestNewFilesAgrees: cad.NewFiles takes what revision.NewFiles takes and
// gives the same files; cad.FilesFromStrings is revision's too.
func TestNewFilesAgrees(t *testing.T) {
	m := map[string][]byte{"Kptfile": []byte("kind: Kptfile\n"), "a/b.yaml": []byte("x: 1\n")}
	got, err := cad.NewFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	want, err := revision.NewFiles(m)
	if err != nil {
		t.Fatal(err)
	}
	fromStrings, err := cad.FilesFromStrings(map[string]string{"Kptfile": "kind: Kptfile\n", "a/b.yaml": "x: 1\n"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []revision.Files{got, fromStrings} {
		if !slices.Equal(f.Paths(), want.Paths()) {
			t.Fatalf("paths %v, want %v", f.Paths(), want.Paths())
		}
		for _, p := range want.Paths() {
			a, _ := f.Get(p)
			b, _ := want.Get(p)
			if !bytes.Equal(a, b) {
				t.Fatalf("%s: %q, want %q", p, a, b)
			}
		}
	}
	if _, err := cad.NewFiles(map[string][]byte{"../x": nil}); !errors.Is(err, repository.ErrInvalidInput) {
		t.Fatalf("unsafe path: %v, want ErrInvalidInput", err)
	}
}
