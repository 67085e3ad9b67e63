package revision

import (
	"errors"
	"io"
	"io/fs"
	"maps"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
)

var packageFiles = map[string]string{
	"Kptfile":                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: root\n",
	"README.md":              "# root\n",
	"deploy/deployment.yaml": "kind: Deployment\n",
	"deploy/service.yaml":    "kind: Service\n",
	"deploy/empty.yaml":      "",
	"sub/Kptfile":            "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: sub\n",
	"sub/a/b/c/deep.yaml":    "kind: ConfigMap\n",
	".krmignore":             ".expected\n",
	"ünïcode/名前.yaml":        "kind: Secret\n",
}

func TestFilesFS(t *testing.T) {
	files := MustFiles(packageFiles)
	if err := fstest.TestFS(files, slices.Sorted(maps.Keys(packageFiles))...); err != nil {
		t.Fatal(err)
	}
	sub, err := fs.Sub(files, "sub")
	if err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(sub, "Kptfile", "a/b/c/deep.yaml"); err != nil {
		t.Fatal(err)
	}
	if err := fstest.TestFS(Files{}); err != nil {
		t.Fatalf("zero Files: %v", err)
	}
}

func TestFilesAccessors(t *testing.T) {
	files := MustFiles(packageFiles)
	if files.Len() != len(packageFiles) {
		t.Errorf("Len = %d", files.Len())
	}
	if got, want := files.Paths(), slices.Sorted(maps.Keys(packageFiles)); !slices.Equal(got, want) {
		t.Errorf("Paths = %v, want %v", got, want)
	}
	if b, ok := files.Get("README.md"); !ok || string(b) != "# root\n" {
		t.Errorf("Get(README.md) = %q, %v", b, ok)
	}
	if _, ok := files.Get("deploy"); ok {
		t.Error("Get of a directory succeeded")
	}
	if b, ok := files.Get("deploy/empty.yaml"); !ok || b == nil || len(b) != 0 {
		t.Errorf("Get(empty) = %#v, %v", b, ok)
	}
	if !files.Has("sub/Kptfile") || files.Has("sub") || files.Has("missing") {
		t.Error("Has is wrong")
	}
	if !reflect.DeepEqual(files.Strings(), packageFiles) {
		t.Errorf("Strings = %v", files.Strings())
	}
	m := files.Map()
	m["README.md"][0] = 'X'
	if b, _ := files.Get("README.md"); b[0] != '#' {
		t.Error("Map shares content with Files")
	}
	b, err := files.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	b[0] = 'X'
	if b, _ := files.Get("README.md"); b[0] != '#' {
		t.Error("ReadFile shares content with Files")
	}
	if !files.Equal(MustFiles(packageFiles)) || files.Equal(Files{}) || !(Files{}).Equal(MustFiles(nil)) {
		t.Error("Equal is wrong")
	}
}

func TestFilesErrors(t *testing.T) {
	files := MustFiles(packageFiles)
	for _, tc := range []struct {
		name string
		call func() error
		want error
	}{
		{"open missing", func() error { _, err := files.Open("missing"); return err }, fs.ErrNotExist},
		{"open invalid", func() error { _, err := files.Open("/Kptfile"); return err }, fs.ErrInvalid},
		{"open dotdot", func() error { _, err := files.Open("../x"); return err }, fs.ErrInvalid},
		{"readfile dir", func() error { _, err := files.ReadFile("deploy"); return err }, fs.ErrInvalid},
		{"readfile missing", func() error { _, err := files.ReadFile("deploy/x"); return err }, fs.ErrNotExist},
		{"readfile invalid", func() error { _, err := files.ReadFile("a//b"); return err }, fs.ErrInvalid},
		{"readdir file", func() error { _, err := files.ReadDir("Kptfile"); return err }, fs.ErrNotExist},
		{"readdir invalid", func() error { _, err := files.ReadDir("./sub"); return err }, fs.ErrInvalid},
		{"stat missing", func() error { _, err := files.Stat("nope"); return err }, fs.ErrNotExist},
		{"stat invalid", func() error { _, err := files.Stat("sub/"); return err }, fs.ErrInvalid},
		{"sub invalid", func() error { _, err := files.Sub("/sub"); return err }, fs.ErrInvalid},
		{"read a directory", func() error {
			f, err := files.Open("deploy")
			if err != nil {
				return err
			}
			_, err = f.Read(make([]byte, 1))
			return err
		}, fs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var pe *fs.PathError
			if !errors.Is(err, tc.want) || !errors.As(err, &pe) {
				t.Errorf("error %v, want a *fs.PathError matching %v", err, tc.want)
			}
		})
	}
}

func TestFilesReadDir(t *testing.T) {
	files := MustFiles(packageFiles)
	entries, err := files.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if e.IsDir() {
			n += "/"
		}
		names = append(names, n)
	}
	want := []string{".krmignore", "Kptfile", "README.md", "deploy/", "sub/", "ünïcode/"}
	if !slices.Equal(names, want) {
		t.Errorf("ReadDir(.) = %v, want %v", names, want)
	}
	info, err := files.Stat("deploy/service.yaml")
	if err != nil || info.Size() != int64(len("kind: Service\n")) || info.IsDir() || info.Name() != "service.yaml" {
		t.Errorf("Stat = %v, %v", info, err)
	}
	info, err = files.Stat("sub/a")
	if err != nil || !info.IsDir() || info.Mode()&fs.ModeDir == 0 {
		t.Errorf("Stat(dir) = %v, %v", info, err)
	}

	// Reading a directory in batches.
	f, err := files.Open("deploy")
	if err != nil {
		t.Fatal(err)
	}
	d := f.(fs.ReadDirFile)
	var got []string
	for {
		es, err := d.ReadDir(1)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, es[0].Name())
	}
	if !slices.Equal(got, []string{"deployment.yaml", "empty.yaml", "service.yaml"}) {
		t.Errorf("ReadDir(1) loop = %v", got)
	}
}

func TestValidatePath(t *testing.T) {
	for _, p := range []string{
		"Kptfile", "a/b/c.yaml", ".krmignore", ".expected/diff.patch", "a.git", "git/x", "..a", "a..",
		"with space.yaml", "ünïcode/名前.yaml", "a-b_c~d", strings.Repeat("a", 4096),
	} {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	for _, tc := range []struct{ path, reason string }{
		{"", "empty path"},
		{"/etc/passwd", "absolute path"},
		{"/", "absolute path"},
		{"..", "contains a .. segment"},
		{"../x", "contains a .. segment"},
		{"a/../b", "contains a .. segment"},
		{"a/..", "contains a .. segment"},
		{".", "contains a . segment"},
		{"./a", "contains a . segment"},
		{"a/./b", "contains a . segment"},
		{"a\x00b", "contains NUL"},
		{"a\nb", "contains a control character"},
		{"a\tb", "contains a control character"},
		{"a\x7fb", "contains a control character"},
		{`a\b`, "contains a backslash"},
		{`..\x`, "contains a backslash"},
		{"a//b", "empty path segment"},
		{"a/", "empty path segment"},
		{"dir/", "empty path segment"},
		{".git", "contains a .git segment"},
		{".git/config", "contains a .git segment"},
		{"a/.git/HEAD", "contains a .git segment"},
		{"a/.GIT", "contains a .git segment"},
		{"a/.Git/x", "contains a .git segment"},
		{"a\xffb", "not valid UTF-8"},
		{"\xc0\xaf", "not valid UTF-8"},
		{strings.Repeat("a", 4097), "longer than 4096 bytes"},
	} {
		err := ValidatePath(tc.path)
		var pe *PathError
		if !errors.As(err, &pe) || pe.Reason != tc.reason || pe.Path != tc.path || !errors.Is(err, ErrInvalid) {
			t.Errorf("ValidatePath(%q) = %#v, want a *PathError %q matching ErrInvalid", tc.path, err, tc.reason)
		}
	}
}

func TestNewFilesRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		files map[string]string
		path  string // the path the error names
	}{
		{"unsafe path", map[string]string{"ok": "", "../escape": ""}, "../escape"},
		{"first unsafe path in sorted order", map[string]string{"/b": "", "/a": ""}, "/a"},
		{"file and directory", map[string]string{"a": "", "a/b": ""}, "a"},
		{"file and deeper directory", map[string]string{"a/b": "", "a/b/c/d": ""}, "a/b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := FilesFromStrings(tc.files)
			var pe *PathError
			if !errors.As(err, &pe) || pe.Path != tc.path || !errors.Is(err, ErrInvalid) {
				t.Errorf("error %#v, want a *PathError for %q", err, tc.path)
			}
		})
	}
	// Siblings sharing a prefix are not a clash.
	if _, err := FilesFromStrings(map[string]string{"a": "", "ab/c": "", "a.yaml": ""}); err != nil {
		t.Errorf("prefix siblings refused: %v", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("MustFiles did not panic on a bad path")
		}
	}()
	MustFiles(map[string]string{"/x": ""})
}

func TestNewFilesCopies(t *testing.T) {
	in := map[string][]byte{"a": []byte("one"), "nil": nil}
	files, err := NewFiles(in)
	if err != nil {
		t.Fatal(err)
	}
	in["a"][0] = 'X'
	in["b"] = []byte("new")
	if b, _ := files.Get("a"); string(b) != "one" || files.Has("b") {
		t.Error("NewFiles kept a reference to its input")
	}
	if b, ok := files.Get("nil"); !ok || b == nil {
		t.Errorf("nil content stored as %#v, %v; want an empty, non-nil slice", b, ok)
	}
}

func TestFilesWithWithout(t *testing.T) {
	base := MustFiles(packageFiles)
	before := base.Strings()

	data := []byte("new")
	f2, err := base.With("deploy/new.yaml", data)
	if err != nil {
		t.Fatal(err)
	}
	data[0] = 'X'
	if b, _ := f2.Get("deploy/new.yaml"); string(b) != "new" {
		t.Errorf("With kept a reference to data: %q", b)
	}
	f3, err := f2.With("README.md", []byte("changed"))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := f2.Get("README.md"); string(b) != "# root\n" {
		t.Error("With changed its receiver")
	}
	if b, _ := f3.Get("README.md"); string(b) != "changed" {
		t.Error("With did not replace the file")
	}
	f4 := f3.Without("deploy")
	f5 := f4.Without("Kptfile").Without("missing")
	if !reflect.DeepEqual(base.Strings(), before) {
		t.Error("With/Without changed the base Files")
	}
	if f4.Has("deploy/service.yaml") || f4.Has("deploy/new.yaml") || !f3.Has("deploy/service.yaml") {
		t.Error("Without(dir) did not remove exactly the directory in the copy")
	}
	if !f4.Has("Kptfile") || f5.Has("Kptfile") || !f5.Has("sub/Kptfile") {
		t.Error("Without(file) is wrong")
	}
	if f5.Without("sub/a").Has("sub/a/b/c/deep.yaml") {
		t.Error("Without of a nested directory kept its files")
	}

	for _, tc := range []struct{ name, path string }{
		{"unsafe", "../x"},
		{"file over a directory", "deploy"},
		{"directory under a file", "README.md/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := base.With(tc.path, nil)
			if !errors.Is(err, ErrInvalid) {
				t.Errorf("With(%q) error = %v, want ErrInvalid", tc.path, err)
			}
			if !got.Equal(base) {
				t.Error("failed With did not return the receiver unchanged")
			}
		})
	}

	var zero Files
	z, err := zero.With("a", []byte("x"))
	if err != nil || z.Len() != 1 || zero.Len() != 0 {
		t.Errorf("With on the zero Files: %v, %d, %d", err, z.Len(), zero.Len())
	}
	if zero.Without("a").Len() != 0 {
		t.Error("Without on the zero Files")
	}
}

func TestFilesSub(t *testing.T) {
	files := MustFiles(packageFiles)
	sub := files.Subdir("sub")
	if want := []string{"Kptfile", "a/b/c/deep.yaml"}; !slices.Equal(sub.Paths(), want) {
		t.Errorf("Subdir(sub) = %v, want %v", sub.Paths(), want)
	}
	if got := files.Subdir("sub/a/b").Paths(); !slices.Equal(got, []string{"c/deep.yaml"}) {
		t.Errorf("Subdir(sub/a/b) = %v", got)
	}
	if files.Subdir("missing").Len() != 0 || files.Subdir("Kptfile").Len() != 0 || files.Subdir("su").Len() != 0 {
		t.Error("Subdir of a missing directory, a file or a name prefix is not empty")
	}
	if files.Subdir("../x").Len() != 0 {
		t.Error("Subdir of an invalid path is not empty")
	}
	s, err := files.Sub(".")
	if err != nil || !s.(Files).Equal(files) {
		t.Errorf("Sub(.) = %v, %v", s, err)
	}
	s, err = files.Sub("deploy")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.(Files).Paths(); !slices.Equal(got, []string{"deployment.yaml", "empty.yaml", "service.yaml"}) {
		t.Errorf("Sub(deploy) = %v", got)
	}
	if _, err := files.Sub("nowhere"); err != nil {
		t.Errorf("Sub of a missing directory: %v", err)
	}
}

// FuzzValidatePath checks that an accepted path is a valid io/fs path that
// stays inside the package on every OS, names no .git directory and is
// clean.
func FuzzValidatePath(f *testing.F) {
	for _, s := range []string{
		"Kptfile", "a/b", "../a", "a/../../b", "/abs", `a\b`, `..\..\x`, "a//b", "a/", ".", "..",
		".git/config", "a/.GIT/x", "\x00", "a\nb", "\xff", "C:/x", "c:x", "~/x", "a/ ./b", "...", "名前",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		err := ValidatePath(p)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v does not match ErrInvalid", err)
			}
			return
		}
		if !fs.ValidPath(p) {
			t.Fatalf("%q accepted but not fs.ValidPath", p)
		}
		if path.Clean(p) != p || path.IsAbs(p) {
			t.Fatalf("%q accepted but not clean and relative", p)
		}
		if !filepath.IsLocal(filepath.FromSlash(p)) {
			t.Fatalf("%q accepted but not local", p)
		}
		for _, seg := range strings.Split(p, "/") {
			if seg == ".." || strings.EqualFold(seg, ".git") {
				t.Fatalf("%q accepted with segment %q", p, seg)
			}
		}
		if strings.ContainsAny(p, "\\\x00") {
			t.Fatalf("%q accepted with a backslash or NUL", p)
		}
		// An accepted path can be stored and read back.
		files, err := NewFiles(map[string][]byte{p: []byte("x")})
		if err != nil {
			t.Fatalf("NewFiles refused an accepted path %q: %v", p, err)
		}
		if b, err := fs.ReadFile(files, p); err != nil || string(b) != "x" {
			t.Fatalf("ReadFile(%q) = %q, %v", p, b, err)
		}
	})
}
