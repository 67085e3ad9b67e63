// Command quickstart shows cad's repository contract on a real git
// repository: it creates a bare repository in a temporary directory, opens
// it with the git backend, creates a draft package, commits files,
// proposes and approves it as revision 1, and prints the refs and commits
// it wrote, as git itself sees them.
//
//	go run ./examples/quickstart [-keep]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/configasdata/cad/repository"
	"github.com/configasdata/cad/repository/gitrepo"
	"github.com/configasdata/cad/revision"
)

const kptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: hello
  annotations:
    config.kubernetes.io/local-config: "true"
info:
  description: A first package, published with cad.
`

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: hello
spec:
  replicas: 1
  selector:
    matchLabels: {app: hello}
  template:
    metadata:
      labels: {app: hello}
    spec:
      containers:
      - name: hello
        image: nginx:1.27
`

// out receives everything the quickstart prints; tests capture it.
var out io.Writer = os.Stdout

func main() {
	keep := flag.Bool("keep", false, "keep the temporary repository and print its path")
	flag.Parse()
	if err := run(*keep); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

func run(keep bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	tmp, err := os.MkdirTemp("", "cad-quickstart-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Fprintln(out, "repository:", tmp)
	} else {
		defer os.RemoveAll(tmp)
	}
	dir := filepath.Join(tmp, "blueprints.git")
	if _, err := git.PlainInit(dir, true); err != nil {
		return fmt.Errorf("init bare repository: %w", err)
	}

	// 1. Open it through the repository contract; createBranch makes main.
	repo, err := gitrepo.Open(ctx, repository.Spec{
		Name: "blueprints",
		Type: repository.TypeGit,
		Git:  &repository.GitSpec{Repo: dir, Branch: "main", CreateBranch: true},
	}, nil)
	if err != nil {
		return err
	}
	defer repo.Close()
	fmt.Fprintln(out, "opened git repository", dir)

	// 2. A draft: nothing is written until Commit.
	key := revision.Key{Package: "apps/hello", Workspace: "ws1"}
	files, err := revision.FilesFromStrings(map[string]string{"Kptfile": kptfile})
	if err != nil {
		return err
	}
	draft, err := repo.CreateDraft(ctx, key, repository.CreateDraftOptions{Files: files})
	if err != nil {
		return err
	}
	if err := draft.SetFile("deployment.yaml", []byte(deployment)); err != nil {
		return err
	}
	pr, err := draft.Commit(ctx, revision.CommitOptions{Message: "Creating new empty revision"})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "committed draft %s (%s)\n", pr.Meta().Key, short(pr.Meta().Version))

	// 3. Propose, then approve: approval assigns revision 1.
	if pr, err = repo.UpdateLifecycle(ctx, key, revision.LifecycleProposed, repository.UpdateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(out, "proposed %s\n", pr.Meta().Key)
	if pr, err = repo.UpdateLifecycle(ctx, key, revision.LifecyclePublished, repository.UpdateOptions{}); err != nil {
		return err
	}
	fmt.Fprintf(out, "published %s as revision %d (%s)\n", pr.Meta().Key, pr.Meta().Key.Revision, short(pr.Meta().Version))

	// 4. What the repository lists now.
	revs, err := repo.List(ctx, repository.ListOptions{})
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\nrevisions:")
	for _, r := range revs {
		m := r.Meta()
		f, err := r.Files(ctx)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "  %-40s %-10s %s\n", m.Key, m.Lifecycle, strings.Join(f.Paths(), " "))
	}

	// 5. The refs and commits, read independently of cad.
	return printRefs(dir)
}

func printRefs(dir string) error {
	g, err := git.PlainOpen(dir)
	if err != nil {
		return err
	}
	iter, err := g.References()
	if err != nil {
		return err
	}
	var lines []string
	err = iter.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		hash := ref.Hash()
		if tag, err := g.TagObject(hash); err == nil {
			hash = tag.Target
		}
		msg := ""
		if c, err := g.CommitObject(hash); err == nil {
			msg = firstLine(c.Message)
			if c.NumParents() > 1 {
				msg += fmt.Sprintf(" (merge of %d parents)", c.NumParents())
			}
		}
		lines = append(lines, fmt.Sprintf("  %-28s %s  %s", ref.Name(), short(hash.String()), msg))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(lines)
	fmt.Fprintln(out, "\nrefs written:")
	for _, l := range lines {
		fmt.Fprintln(out, l)
	}
	head, err := g.Reference(plumbing.NewBranchReferenceName("main"), true)
	if err != nil {
		return err
	}
	c, err := g.CommitObject(head.Hash())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\nhead of main, %s by %s:\n", short(c.Hash.String()), signature(c.Committer))
	for _, l := range strings.Split(strings.TrimRight(c.Message, "\n"), "\n") {
		fmt.Fprintln(out, "  "+l)
	}
	return nil
}

func signature(s object.Signature) string { return fmt.Sprintf("%s <%s>", s.Name, s.Email) }

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}
