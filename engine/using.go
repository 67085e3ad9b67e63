package engine

import (
	"context"

	"github.com/configasdata/cad/repository"
)

// Using returns an Engine that works as e does, but on repos in place of
// the repositories of the same names (Repository.Name) that e's
// Repositories resolve: typically write batches (repository.Batch), so
// that the returned Engine's writes to those repositories are held in the
// batches and its reads of them see the batches' writes, as
// database/sql's Tx.Stmt gives a statement of a transaction. e is not
// changed; the returned Engine shares e's options and is safe for
// concurrent use while repos are. The other repositories are resolved
// through e's Repositories, and what they report of each name (URLer,
// Deployer) holds for repos too. A nil repository is ignored.
func (e *Engine) Using(repos ...repository.Repository) *Engine {
	o := e.opts
	o.Repositories = Overlay(e.opts.Repositories, repos...)
	return &Engine{opts: o, refs: e.refs}
}

// Overlay returns Repositories that resolve repos by their names
// (Repository.Name) and every other name through base, and whose Names,
// URL and Deployment are base's (URL "" and Deployment false when base
// does not implement URLer or Deployer). A nil repository is ignored;
// without repos it returns base.
func Overlay(base Repositories, repos ...repository.Repository) Repositories {
	over := make(map[string]repository.Repository, len(repos))
	for _, r := range repos {
		if r != nil {
			over[r.Name()] = r
		}
	}
	if len(over) == 0 {
		return base
	}
	return overlay{base: base, over: over}
}

// overlay resolves the repositories of over by name, and the others
// through base.
type overlay struct {
	base Repositories
	over map[string]repository.Repository
}

var (
	_ URLer    = overlay{}
	_ Deployer = overlay{}
)

func (o overlay) Repository(ctx context.Context, name string) (repository.Repository, error) {
	if r, ok := o.over[name]; ok {
		return r, nil
	}
	return o.base.Repository(ctx, name)
}

func (o overlay) Names(ctx context.Context) ([]string, error) { return o.base.Names(ctx) }

// URL is base's URL when base implements URLer; otherwise "", which the
// engine reads as "no URL", as it reads a base without URLer.
func (o overlay) URL(name string) string {
	if u, ok := o.base.(URLer); ok {
		return u.URL(name)
	}
	return ""
}

// Deployment is base's Deployment when base implements Deployer; false
// otherwise, as for a base without Deployer.
func (o overlay) Deployment(name string) bool {
	d, ok := o.base.(Deployer)
	return ok && d.Deployment(name)
}
