package gitrepo

// The invariants of the git backend that DESIGN.md lists under
// "Invariants", each enforced by a test here: a change that breaks one
// fails it.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo/internal/index"
	"github.com/configasdata/cad/revision"
)

var updateDerivation = flag.Bool("update-derivation", false, "write the golden outputs of TestDerivationGolden for a derivation version that has none yet")

// sourceFile is a non-test Go file of package gitrepo or its internal
// packages, parsed.
type sourceFile struct {
	rel  string // slash-separated, relative to repository/gitrepo
	file *ast.File
	fset *token.FileSet
}

// sources parses every non-test Go file under repository/gitrepo.
func sources(t *testing.T) []sourceFile {
	t.Helper()
	var out []sourceFile
	fset := token.NewFileSet()
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, sourceFile{rel: filepath.ToSlash(p), file: f, fset: fset})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found %d source files: not run in repository/gitrepo?", len(out))
	}
	return out
}

// eachCall calls fn with every call in f and the name of the function
// declaration it lies in.
func eachCall(f *ast.File, fn func(call *ast.CallExpr, fun string)) {
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		ast.Inspect(fd.Body, func(n ast.Node) bool {
			if call, ok := n.(*ast.CallExpr); ok {
				fn(call, fd.Name.Name)
			}
			return true
		})
	}
}

// calledName returns the name a call calls (the selector's, for a method
// or a package's function) and, for a selector, the text of what it is
// selected from.
func calledName(call *ast.CallExpr) (name, from string) {
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		return fun.Name, ""
	case *ast.SelectorExpr:
		return fun.Sel.Name, exprText(fun.X)
	}
	return "", ""
}

// exprText is a short text of expression e: its identifiers and
// selectors joined by dots.
func exprText(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprText(e.X) + "." + e.Sel.Name
	case *ast.CallExpr:
		return exprText(e.Fun) + "()"
	case *ast.IndexExpr:
		return exprText(e.X) + "[]"
	case *ast.ParenExpr:
		return exprText(e.X)
	case *ast.StarExpr:
		return exprText(e.X)
	}
	return "?"
}

// Invariant 1: on disk, every ref is written through the ref store's
// transaction (internal/refstore), never through go-git (which rewrites
// a ref in place and several refs one after another) nor by a file
// operation of its own: the crash-safety protocol holds only if no other
// code writes a ref file. This test fails on a go-git ref write outside
// the places that write go-git's storage in memory, and on a file
// operation (os.WriteFile, Rename, Create, ...) outside internal/refstore
// whose arguments name a ref: a string like "refs/...", "HEAD" or
// "packed-refs", or an identifier that starts with "ref" or holds "Ref".
func TestRefWritesOnlyThroughRefstore(t *testing.T) {
	// go-git's calls that write refs, and where they may be called: on
	// go-git storage in memory only.
	gogitWrites := map[string]bool{
		"SetReference": true, "CheckAndSetReference": true, "RemoveReference": true, "PackRefs": true,
		"CreateTag": true, "DeleteTag": true, "CreateBranch": true, "DeleteBranch": true,
		"Fetch": true, "FetchContext": true, "Push": true, "PushContext": true,
	}
	// go-git's functions (package git) that make a repository with refs.
	gogitFuncs := map[string]bool{
		"Clone": true, "CloneContext": true, "PlainClone": true, "PlainCloneContext": true,
		"Init": true, "PlainInit": true, "PlainInitWithOptions": true, "PlainOpen": false,
	}
	allowed := map[string]string{
		// file:function:call -> why
		"txn.go:swapRef:RemoveReference":      "applyRefs' path for go-git storage in memory (v.fr == nil)",
		"txn.go:swapRef:CheckAndSetReference": "applyRefs' path for go-git storage in memory (v.fr == nil)",
		"fetch.go:Fetch:FetchContext":         "Fetcher fetches an upstream into a memory.Storage of its own",
		"maintenance.go:maintain:PackRefs":    "refstore's PackRefs (r.st.fsrefs), not go-git's",
		"gitrepo.go:initBareDir:WriteFile":    "HEAD of a repository being created, before any reader or writer",
	}
	fileOps := map[string]bool{
		"WriteFile": true, "Create": true, "CreateTemp": true, "OpenFile": true, "Rename": true,
		"Remove": true, "RemoveAll": true, "Link": true, "Symlink": true, "Truncate": true,
		"Chmod": true, "RenameOpen": true, "RemoveIfAbandoned": true,
	}
	refIdent := regexp.MustCompile(`^ref|Ref|REF`)
	refString := regexp.MustCompile(`(^|/)(refs(/|$)|packed-refs|[A-Z_]*HEAD$)`)
	namesRef := func(e ast.Expr) (what string) {
		ast.Inspect(e, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && refString.MatchString(s) {
					what = strconv.Quote(s)
				}
			case *ast.Ident:
				if refIdent.MatchString(n.Name) {
					what = n.Name
				}
			}
			return what == ""
		})
		return what
	}
	used := map[string]bool{}
	for _, sf := range sources(t) {
		if strings.HasPrefix(sf.rel, "internal/refstore/") {
			continue // the ref store itself
		}
		eachCall(sf.file, func(call *ast.CallExpr, fun string) {
			name, from := calledName(call)
			at := sf.fset.Position(call.Pos())
			where := fmt.Sprintf("%s:%s:%s", sf.rel, fun, name)
			switch {
			case gogitWrites[name] || from == "git" && gogitFuncs[name]:
				if _, ok := allowed[where]; ok {
					used[where] = true
					return
				}
				t.Errorf("%s: %s.%s writes refs through go-git; on disk every ref write goes through refstore.FSRefs.Transact (applyRefs)", at, from, name)
			case fileOps[name] && (from == "os" || from == "refstore" || from == "ioutil"):
				for _, arg := range call.Args {
					if what := namesRef(arg); what != "" {
						if _, ok := allowed[where]; ok {
							used[where] = true
							return
						}
						t.Errorf("%s: %s.%s on %s: a ref file is written only by refstore's transaction", at, from, name, what)
						return
					}
				}
			}
		})
	}
	for where, why := range allowed {
		if !used[where] {
			t.Errorf("allowed call %s (%s) is not there any more: remove it from the list", where, why)
		}
	}
}

// Invariant 4: the library never runs the git binary (doc.go): nothing in
// package gitrepo or its internal packages but tests imports os/exec.
func TestNeverRunsGit(t *testing.T) {
	for _, sf := range sources(t) {
		for _, imp := range sf.file.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" || p == "syscall" && sf.hasCall("Exec", "ForkExec", "StartProcess") {
				t.Errorf("%s imports %s: the library never runs the git binary (or any other)", sf.rel, p)
			}
		}
		eachCall(sf.file, func(call *ast.CallExpr, fun string) {
			if name, from := calledName(call); from == "os" && name == "StartProcess" {
				t.Errorf("%s: os.StartProcess: the library never runs the git binary", sf.fset.Position(call.Pos()))
			}
		})
	}
}

// hasCall reports whether f calls a function of one of names.
func (sf sourceFile) hasCall(names ...string) bool {
	found := false
	eachCall(sf.file, func(call *ast.CallExpr, _ string) {
		if name, _ := calledName(call); slices.Contains(names, name) {
			found = true
		}
	})
	return found
}

// derivationFixture builds, with git fast-import, a repository with a
// fixed content that holds what the derivations of the index records
// meet: Porch's commits and approvals (a merge), a hand-made tag on an
// approval, an adopted revision (an annotated tag whose message names
// its workspace, one of them on a commit naming another), a tag on a
// commit that names no workspace, a commit
// naming two packages, a nested package, a non-ASCII author in another
// zone, a message without a final newline and a draft branch.
func derivationFixture(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "derivation.git")
	run := func(stdin string, args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run("", "init", "--quiet", "--bare", "-b", "main", ".")
	var b strings.Builder
	data := func(s string) { fmt.Fprintf(&b, "data %d\n%s\n", len(s), s) }
	blob := func(mark int, s string) { fmt.Fprintf(&b, "blob\nmark :%d\n", mark); data(s) }
	kpt := func(name string) string {
		return "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"
	}
	porch := "Package Orchestration Service <porch@kpt.dev>"
	commit := func(ref string, mark int, author string, when int, msg string, parents []int, files ...string) {
		fmt.Fprintf(&b, "commit %s\nmark :%d\nauthor %s %d\ncommitter %s 1767225600 +0000\n", ref, mark, author, when, porch)
		data(msg)
		for i, p := range parents {
			if i == 0 {
				fmt.Fprintf(&b, "from :%d\n", p)
			} else {
				fmt.Fprintf(&b, "merge :%d\n", p)
			}
		}
		for _, f := range files {
			b.WriteString(f + "\n")
		}
	}
	blob(1, "Created by porch\n")
	blob(2, kpt("a"))
	blob(3, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n")
	blob(4, kpt("b"))
	blob(5, kpt("y"))
	blob(6, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a2\n")
	commit("refs/heads/main", 10, porch, 1767225600, "Initial commit", nil, "M 100644 :1 README.md")
	commit("refs/heads/drafts/a/ws1", 11, "Jo Dev <jo@example.com>", 1767225700,
		"Intermediate commit\n\n\nkpt:{\"package\":\"a\",\"workspaceName\":\"ws1\",\"revision\":\"0\",\"task\":{\"type\":\"init\",\"init\":{\"description\":\"a\"}}}\n",
		[]int{10}, "M 100644 :2 a/Kptfile", "M 100644 :3 a/cm.yaml")
	commit("refs/heads/main", 12, "Jo Dev <jo@example.com>", 1767225800,
		"Approving package revision `a/1`\n\nkpt:{\"package\":\"a\",\"workspaceName\":\"ws1\",\"revision\":\"1\"}\n",
		[]int{10, 11}, "M 100644 :2 a/Kptfile", "M 100644 :3 a/cm.yaml")
	b.WriteString("reset refs/tags/a/v1\nfrom :12\n\n")
	b.WriteString("reset refs/tags/a/release\nfrom :12\n\n")
	commit("refs/heads/main", 13, "Zoë Ünïcode <zoe@example.com>", 1767225900, "Add b and y, by hand", []int{12},
		"M 100644 :4 b/Kptfile", "M 100644 :5 team/x/y/Kptfile")
	fmt.Fprintf(&b, "tag b/v1\nfrom :13\ntagger %s 1767226000 +0000\n", porch)
	data("Adopting `b` at `main`\n\nkpt:{\"package\":\"b\",\"workspaceName\":\"adopted\",\"revision\":\"1\"}\n")
	b.WriteString("reset refs/tags/team/x/y/v2\nfrom :13\n\n")
	commit("refs/heads/main", 14, "Jo Dev <jo@example.com> ", 1767226100,
		"Approving two\n\nkpt:{\"package\":\"b\",\"workspaceName\":\"wsb2\",\"revision\":\"2\"}\nkpt:{\"package\":\"team/x/y\",\"workspaceName\":\"wsy\",\"revision\":\"3\"}\nkpt:{\"package\":\"b\",\"workspaceName\":\"second\"}\n",
		[]int{13}, "M 100644 :6 a/cm.yaml", "D README.md")
	b.WriteString("reset refs/tags/b/v2\nfrom :14\n\nreset refs/tags/team/x/y/v3\nfrom :14\n\n")
	fmt.Fprintf(&b, "tag a/v2\nfrom :14\ntagger %s 1767226200 +0100\n", porch)
	data("Adopting elsewhere\n\nkpt:{\"package\":\"c\",\"workspaceName\":\"notmine\"}\n")
	fmt.Fprintf(&b, "tag b/v3\nfrom :14\ntagger %s 1767226300 +0000\n", porch)
	data("Adopting `b` at `main`\n\nkpt:{\"package\":\"b\",\"workspaceName\":\"adopted3\",\"revision\":\"3\"}\n")
	b.WriteString("done\n")
	script := strings.Replace(b.String(), "author Jo Dev <jo@example.com>  1767226100", "author Jo Dev <jo@example.com> 1767226100 -0700", 1)
	script = regexp.MustCompile(`(?m)^(author .*> \d+)$`).ReplaceAllString(script, "$1 +0000")
	script = strings.Replace(script, "author Zoë Ünïcode <zoe@example.com> 1767225900 +0000", "author Zoë Ünïcode <zoe@example.com> 1767225900 +0530", 1)
	run(script, "fast-import", "--quiet", "--done")
	return dir
}

// derivations returns what each kind of index record's derivation answers
// on the repository at dir, read with every index off (from the objects):
// a line per root tree and path (the tree it leads to), per tag (what its objects say of its workspace, and
// its workspace).
func derivations(t *testing.T, dir string) map[index.Kind]string {
	t.Helper()
	defer index.SetOff(true, true)()
	ctx := context.Background()
	r, err := Open(ctx, repository.Spec{Name: "d", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	git := func(args ...string) []string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
		if err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
		return strings.Fields(string(out))
	}
	commits := git("rev-list", "--all")
	slices.Sort(commits)
	tags := git("for-each-ref", "--format=%(refname) %(objectname)", "refs/tags/")
	out := map[index.Kind]*strings.Builder{index.PathRecords: {}, index.WorkspaceRecords: {}}
	err = r.read(ctx, func(v *view) error {
		for _, id := range commits {
			c, err := v.commit(plumbing.NewHash(id))
			if err != nil {
				return err
			}
			for _, p := range []string{"a", "b", "team", "team/x", "team/x/y", "a/Kptfile", "missing", "team/x/y/z"} {
				h, ok, err := v.subtree(c.Tree, p)
				if err != nil {
					return err
				}
				fmt.Fprintf(out[index.PathRecords], "%s %q %s %v\n", c.Tree, p, h, ok)
			}
		}
		for i := 0; i+1 < len(tags); i += 2 {
			name, h := strings.TrimPrefix(tags[i], "refs/tags/"), plumbing.NewHash(tags[i+1])
			full, ver, _ := splitLast(name)
			c, err := v.commit(h)
			if err != nil {
				return err
			}
			w := objectWorkspace(v.tagAnnotations(h), c, full)
			fmt.Fprintf(out[index.WorkspaceRecords], "%s %s %q %q\n", name, h, w, tagWorkspace(ver, w))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	res := map[index.Kind]string{}
	for k, b := range out {
		res[k] = b.String()
	}
	return res
}

// Invariant 2: the records of cad-paths are facts derived from immutable
// objects, each kind by code with a version (index.PathVersion,
// WorkspaceVersion) that seeds the
// records' checksums. A change to what a derivation answers must bump its
// version, else records the old code wrote would be read as answers of
// the new: this test keeps, per kind and version, what the derivation
// answers on a fixed repository (testdata/derivation/<kind>-v<N>.txt),
// and fails when the current version's answers differ. After a bump,
// -update-derivation writes the new version's file; it never rewrites an
// existing one.
func TestDerivationGolden(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs the git CLI")
	}
	got := derivations(t, derivationFixture(t))
	versions := map[index.Kind]int{index.PathRecords: index.PathVersion, index.WorkspaceRecords: index.WorkspaceVersion}
	constName := map[index.Kind]string{index.PathRecords: "PathVersion", index.WorkspaceRecords: "WorkspaceVersion"}
	for k, v := range versions {
		file := filepath.Join("testdata", "derivation", fmt.Sprintf("%s-v%d.txt", k, v))
		want, err := os.ReadFile(file)
		if errors.Is(err, fs.ErrNotExist) && *updateDerivation {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(got[k]), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%v (run with -update-derivation to write it for a new version)", err)
		}
		if got[k] != string(want) {
			t.Errorf("the %s derivation answers differently from %s:\n%s\n"+
				"Records written by the old code would be read as answers of the new one: bump index.%s "+
				"(internal/index/derivation.go) and run this test with -update-derivation.",
				k, file, lineDiff(string(want), got[k]), constName[k])
		}
	}
	if lines := strings.Count(got[index.WorkspaceRecords], "\n"); lines < 6 {
		t.Errorf("the fixture has %d tags", lines)
	}
}

// lineDiff lists the lines only want holds (-) and only got holds (+).
func lineDiff(want, got string) string {
	var b strings.Builder
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for _, l := range w {
		if !slices.Contains(g, l) {
			fmt.Fprintf(&b, "- %s\n", l)
		}
	}
	for _, l := range g {
		if !slices.Contains(w, l) {
			fmt.Fprintf(&b, "+ %s\n", l)
		}
	}
	return b.String()
}

// Invariant 3: the workspace of a tag is decided by one rule
// (tagWorkspace, with objectWorkspace for what the objects say and
// tagWorkspaceMatches for a workspace record): every function that
// decides it calls them, and each is listed here with the operation that
// checks it below. A new caller fails until it is listed (and checked);
// every caller must answer as tagWorkspace on every tag of the
// derivation fixture: List, Get by workspace and the workspace check of a
// new draft (through the objects and through the workspace records, and
// in a write batch), and an approval's record read back.
func TestTagWorkspaceOneRule(t *testing.T) {
	callers := map[string]string{
		"read.go:tagRev":                "List, Get",
		"read.go:tagMayHaveWorkspace":   "Get by workspace, CreateDraft's check",
		"write.go:UpdateLifecycle":      "the record an approval writes, read by a new Repository's Get",
		"layout.go:objectWorkspace":     "the rule itself",
		"layout.go:tagWorkspace":        "the rule itself",
		"layout.go:tagWorkspaceMatches": "the rule itself",
	}
	rule := map[string]bool{"objectWorkspace": true, "tagWorkspace": true, "tagWorkspaceMatches": true, "WsRecord": true, "WsHash": true}
	seen := map[string]bool{}
	for _, sf := range sources(t) {
		if strings.Contains(sf.rel, "/") {
			continue
		}
		eachCall(sf.file, func(call *ast.CallExpr, fun string) {
			name, from := calledName(call)
			if !rule[name] || (name == "WsRecord" || name == "WsHash") && from != "index" {
				return
			}
			where := sf.rel + ":" + fun
			if _, ok := callers[where]; !ok {
				t.Errorf("%s: %s decides the workspace of a tag and is not checked by TestTagWorkspaceOneRule: list it there with an operation that reaches it", sf.fset.Position(call.Pos()), fun)
			}
			seen[where] = true
		})
	}
	for where := range callers {
		if !seen[where] && !strings.HasPrefix(where, "layout.go:") {
			t.Errorf("listed caller %s no longer decides a tag's workspace: remove it from the list", where)
		}
	}

	// The rule on a record's hash is the rule.
	for _, ver := range []string{"v1", "v12", "v0", "release", "1"} {
		for _, obj := range []string{"", "ws", "v1", "release"} {
			for _, ws := range []string{"", "ws", "v1", "v12", "release", "other"} {
				if got, want := tagWorkspaceMatches(ver, index.WsHash(obj), ws, index.WsHash(ws)), tagWorkspace(ver, obj) == ws; got != want {
					t.Errorf("tag %s whose objects say %q, workspace %q: tagWorkspaceMatches %v, tagWorkspace says %v", ver, obj, ws, got, want)
				}
			}
		}
	}

	// Every operation over every tag, as tagWorkspace decides.
	ctx := context.Background()
	dir := derivationFixture(t)
	want := map[string]string{} // tag -> workspace
	for line := range strings.SplitSeq(strings.TrimSpace(derivations(t, dir)[index.WorkspaceRecords]), "\n") {
		f := strings.Fields(line)
		ws, err := strconv.Unquote(f[3])
		if err != nil {
			t.Fatal(err)
		}
		want[f[0]] = ws
	}
	spec := repository.Spec{Name: "d", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}
	check := func(t *testing.T) {
		t.Helper()
		listed := map[string]string{}
		r, err := Open(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		revs, err := r.List(ctx, repository.ListOptions{})
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, pr := range revs {
			k := pr.Meta().Key
			if pr.Meta().Lifecycle == revision.LifecyclePublished && k.Workspace != "main" {
				listed[k.Package] += k.Workspace + ","
			}
		}
		for tag, ws := range want {
			full, _, _ := splitLast(tag)
			if !strings.Contains(","+listed[full], ","+ws+",") {
				t.Errorf("List: package %s has workspaces %s, not %s of tag %s", full, listed[full], ws, tag)
			}
			// A new Repository for each: a Get by workspace, and the
			// check of a new draft, in a new process.
			r, err := Open(ctx, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			pr, err := r.Get(ctx, revision.Key{Package: full, Workspace: ws})
			if err != nil || pr.Meta().Key.Workspace != ws {
				t.Errorf("Get %s by workspace %s (tag %s): %v", full, ws, tag, err)
			}
			_, err = r.CreateDraft(ctx, revision.Key{Package: full, Workspace: ws}, repository.CreateDraftOptions{Files: kptFiles("x")})
			if !errors.Is(err, repository.ErrAlreadyExists) {
				t.Errorf("CreateDraft %s with workspace %s of tag %s: %v, want ErrAlreadyExists", full, ws, tag, err)
			}
			// Through a write batch, whose reads see its own writes.
			b, err := r.BeginBatch(ctx)
			if err != nil {
				t.Fatal(err)
			}
			pr, err = b.Get(ctx, revision.Key{Package: full, Workspace: ws})
			if err != nil || pr.Meta().Key.Workspace != ws {
				t.Errorf("batch: Get %s by workspace %s (tag %s): %v", full, ws, tag, err)
			}
			_, err = b.CreateDraft(ctx, revision.Key{Package: full, Workspace: ws}, repository.CreateDraftOptions{Files: kptFiles("x")})
			if !errors.Is(err, repository.ErrAlreadyExists) {
				t.Errorf("batch: CreateDraft %s with workspace %s of tag %s: %v, want ErrAlreadyExists", full, ws, tag, err)
			}
			b.Discard()
			r.Close()
		}
	}
	t.Run("objects", func(t *testing.T) {
		defer index.SetOff(false, true)()
		check(t)
	})
	t.Run("records", func(t *testing.T) {
		check(t) // the first Gets learn the records the next ones read
		check(t)
	})
	t.Run("approved", func(t *testing.T) {
		// An approval records its tag's workspace; a new Repository
		// finds it by that record alone.
		r, err := Open(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		k := revision.Key{Package: "b", Workspace: "fresh"}
		d, err := r.CreateDraft(ctx, k, repository.CreateDraftOptions{Files: kptFiles("b")})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Commit(ctx, revision.CommitOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := r.UpdateLifecycle(ctx, k, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		pr, err := r.UpdateLifecycle(ctx, k, revision.LifecyclePublished, repository.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tag := fmt.Sprintf("b/v%d", pr.Meta().Key.Revision)
		h := strings.TrimSpace(mustGit(t, dir, "rev-parse", tag))
		recs := func() index.WsRecords {
			pf := index.NewPathFile(dir)
			defer pf.Close()
			return pf.Workspaces("b")
		}()
		got, ok := recs.Get(plumbing.NewHash(h))
		if !ok || !tagWorkspaceMatches(fmt.Sprintf("v%d", pr.Meta().Key.Revision), got, "fresh", index.WsHash("fresh")) {
			t.Errorf("the approval of %s recorded %v (%v), not its workspace %q", tag, got, ok, "fresh")
		}
	})
}

// mustGit runs git in dir and returns its output.
func mustGit(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return string(out)
}

// Invariant 5: the indexes are caches: with every index off, with them
// written, damaged, or written by another derivation version, every read
// answers the same (deleting them loses nothing but time).
func TestIndexesLoseNothing(t *testing.T) {
	ctx := context.Background()
	dir := derivationFixture(t)
	spec := repository.Spec{Name: "d", Type: repository.TypeGit, Git: &repository.GitSpec{Repo: dir}}
	answers := func() string {
		r, err := Open(ctx, spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		revs, err := r.List(ctx, repository.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, pr := range revs {
			m := pr.Meta()
			fmt.Fprintf(&b, "%s %s %s %s %v\n", m.Key, m.Lifecycle, m.Version, m.PublishedBy, m.Creation)
			// A new Repository's Get and files, which look in cad-paths.
			g, err := Open(ctx, spec, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := g.Get(ctx, m.Key)
			if err == nil {
				var files revision.Files
				if files, err = got.Files(ctx); err == nil {
					fmt.Fprintf(&b, "  get %s %v\n", got.Meta().Version, files.Paths())
				}
			}
			if err != nil {
				fmt.Fprintf(&b, "  get: %v\n", err)
			}
			g.Close()
		}
		return b.String()
	}
	// A cad-index, which older versions wrote, is ignored: these
	// records, were they read, would answer wrongly.
	oldIndex := filepath.Join(dir, "cad-index")
	planted := "c " + strings.Repeat("0", 40) + " garbage\np " + strings.Repeat("1", 40) + " \"a\" " + strings.Repeat("2", 40) + " 40000 00000000\n"
	if err := os.WriteFile(oldIndex, []byte(planted), 0o644); err != nil {
		t.Fatal(err)
	}
	var want string
	func() {
		defer index.SetOff(true, true)()
		want = answers()
	}()
	if _, err := os.Stat(filepath.Join(dir, "cad-paths")); err == nil {
		t.Fatal("cad-paths written with the indexes off")
	}
	if got := answers(); got != want { // writes them
		t.Errorf("writing the indexes (- without, + with):\n%s", lineDiff(want, got))
	}
	if _, err := os.Stat(filepath.Join(dir, "cad-paths")); err != nil {
		t.Fatalf("cad-paths not written: %v", err)
	}
	if data, err := os.ReadFile(oldIndex); err != nil || string(data) != planted {
		t.Fatalf("the old cad-index was written to or removed by reads: %v", err)
	}
	if got := answers(); got != want { // reads them
		t.Errorf("from the indexes (- without, + with):\n%s", lineDiff(want, got))
	}
	for _, k := range []index.Kind{index.PathRecords, index.WorkspaceRecords} {
		func() {
			defer index.SetDerivationVersion(k, 2)()
			if got := answers(); got != want {
				t.Errorf("with %s records of another version (- without, + with):\n%s", k, lineDiff(want, got))
			}
		}()
	}
	// Damaged: every byte of the file's second half flipped.
	for _, f := range []string{"cad-paths"} {
		p := filepath.Join(dir, f)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(data) / 2; i < len(data); i++ {
			data[i] ^= 0x5a
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if got := answers(); got != want {
		t.Errorf("from damaged indexes (- without, + with):\n%s", lineDiff(want, got))
	}
}

// kptFiles is a package of one Kptfile naming name.
func kptFiles(name string) revision.Files {
	f, err := revision.FilesFromStrings(map[string]string{"Kptfile": "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: " + name + "\n"})
	if err != nil {
		panic(err)
	}
	return f
}
