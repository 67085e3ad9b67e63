package deps

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/configasdata/cad/revision"
)

// ConditionType is the readiness condition [Check] computes and the
// engine's CheckDependencies sets: True when every requirement of the
// revision is satisfied and no cycle runs through it, False otherwise,
// with the missing requirements and cycles in its message. A revision
// with a readiness gate of this type cannot be approved while it is not
// True.
const ConditionType = "deps.cad.configasdata.dev/satisfied"

// Package is one package taking part in a resolution: a revision's key
// and what it declares. Err, when set, says why its declarations could not
// be read; such a package requires and provides nothing (only itself, for
// a package requirement) and is named in the reason of a requirement it
// would have satisfied.
type Package struct {
	Key          revision.Key
	Dependencies revision.Dependencies
	Err          error
}

// Status is the outcome of one requirement.
type Status string

// The statuses of a [Binding].
const (
	// Satisfied: exactly one provider.
	Satisfied Status = "Satisfied"
	// Ambiguous: several providers; the first in provider order is
	// chosen (see [Resolve]). An ambiguous requirement counts as satisfied.
	Ambiguous Status = "Ambiguous"
	// Missing: no provider.
	Missing Status = "Missing"
)

// Binding is the outcome of one requirement of a package.
type Binding struct {
	Requirement revision.Dependency
	Status      Status
	// Explicit reports a pinned provider: a package requirement, or an
	// api or capability with a package.
	Explicit bool
	// Provider is the chosen provider; the zero Key when Missing. A
	// package that provides what it requires is its own provider.
	Provider revision.Key
	// Candidates are every provider found, in provider order (more than
	// one when Ambiguous).
	Candidates []revision.Key
	// Reason says why a requirement is Missing.
	Reason string
}

// Result is the resolution of one package's requirements. A Result is a
// plain value.
type Result struct {
	// Package is the package resolved.
	Package revision.Key
	// Bindings holds one entry per requirement, in declaration order.
	Bindings []Binding
	// Cycles are the cycles of package requirements that run through
	// Package or through a package it depends on, each the packages of
	// one cycle in the order their requirements follow each other,
	// starting with Package when it is on the cycle. A package that
	// requires itself is a cycle of one.
	Cycles [][]revision.Key
}

// Satisfied reports whether every requirement has a provider and no
// cycle was found.
func (r *Result) Satisfied() bool { return len(r.Missing()) == 0 && len(r.Cycles) == 0 }

// Missing returns the bindings without a provider.
func (r *Result) Missing() []Binding { return r.with(Missing) }

// Ambiguous returns the bindings with several providers.
func (r *Result) Ambiguous() []Binding { return r.with(Ambiguous) }

func (r *Result) with(s Status) []Binding {
	var out []Binding
	for _, b := range r.Bindings {
		if b.Status == s {
			out = append(out, b)
		}
	}
	return out
}

// Condition returns the readiness condition of type [ConditionType] that
// r amounts to: True (reason Satisfied) or False (reason Missing or
// Cycle) with the missing requirements and cycles in its message.
func (r *Result) Condition() revision.Condition {
	if r.Satisfied() {
		return revision.Condition{Type: ConditionType, Status: revision.ConditionTrue, Reason: "Satisfied",
			Message: fmt.Sprintf("%d requirement(s) satisfied", len(r.Bindings))}
	}
	var parts []string
	reason := "Cycle"
	for _, b := range r.Missing() {
		reason = "Missing"
		parts = append(parts, "missing "+b.Requirement.String()+": "+b.Reason)
	}
	for _, c := range r.Cycles {
		parts = append(parts, "cycle "+cycleString(c))
	}
	return revision.Condition{Type: ConditionType, Status: revision.ConditionFalse, Reason: reason, Message: strings.Join(parts, "; ")}
}

func nodeName(k revision.Key) string { return k.Repository + ":" + k.Package }

func cycleString(c []revision.Key) string {
	names := make([]string, 0, len(c)+1)
	for _, k := range c {
		names = append(names, nodeName(k))
	}
	names = append(names, nodeName(c[0]))
	return strings.Join(names, " -> ")
}

// String formats r for a terminal: one line per requirement with its
// status and provider(s), then the cycles, then a summary line.
func (r *Result) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", r.Package)
	if len(r.Bindings) == 0 {
		b.WriteString("  requires nothing\n")
	}
	for _, bd := range r.Bindings {
		how := "implicit"
		if bd.Explicit {
			how = "explicit"
		}
		switch bd.Status {
		case Missing:
			fmt.Fprintf(&b, "  %-9s %s (%s): %s\n", bd.Status, bd.Requirement, how, bd.Reason)
		case Ambiguous:
			others := make([]string, 0, len(bd.Candidates))
			for _, c := range bd.Candidates {
				others = append(others, c.String())
			}
			fmt.Fprintf(&b, "  %-9s %s (%s): %s chosen of %s\n", bd.Status, bd.Requirement, how, bd.Provider, strings.Join(others, ", "))
		default:
			fmt.Fprintf(&b, "  %-9s %s (%s): %s\n", bd.Status, bd.Requirement, how, bd.Provider)
		}
	}
	for _, c := range r.Cycles {
		fmt.Fprintf(&b, "  Cycle     %s\n", cycleString(c))
	}
	if r.Satisfied() {
		b.WriteString("satisfied\n")
	} else {
		fmt.Fprintf(&b, "not satisfied: %d missing, %d cycle(s)\n", len(r.Missing()), len(r.Cycles))
	}
	return b.String()
}

// Resolve resolves the requirements of pkg against universe, the
// packages that may provide them: normally the latest published revision
// of every package of the deployment repository (see [Latest]). An entry
// of universe for pkg's own package (same repository and path) is
// replaced by pkg, so a draft is resolved as if it were published.
//
// Each requirement is bound as follows:
//
//   - a package requirement to the package of that path in the named
//     repository (pkg's own when none is named), if universe holds it and
//     its revision number satisfies the constraint (universe holds one
//     revision per package, so the constraint is checked against that
//     one);
//   - an api or capability pinned to a package, to that package if it
//     provides it;
//   - an api or capability alone to pkg itself if pkg provides it, else to
//     every package of universe that provides it. With several, the
//     requirement is Ambiguous and the first in provider order is chosen:
//     packages of pkg's own repository first, then by repository name,
//     then by package path.
//
// Only pkg's own requirements are bound and reported; a provider's
// missing requirements are not (resolve the provider for those). Cycles
// are found over the requirements of pkg and of every package of
// universe reachable from it through the chosen providers. Resolve does
// no I/O and never fails.
func Resolve(pkg Package, universe []Package) *Result {
	g := newGraph(pkg, universe)
	res := &Result{Package: pkg.Key, Bindings: g.bind(pkg)}
	res.Cycles = g.cycles(pkg.Key)
	return res
}

type graph struct {
	pkgs map[string]Package
	// byCapability and byKind index the packages that provide a
	// capability, or an API of a group and kind ("group/kind"), each in
	// provider order without regard to the requirer's repository.
	byCapability, byKind map[string][]string
}

func newGraph(pkg Package, universe []Package) *graph {
	g := &graph{pkgs: map[string]Package{}, byCapability: map[string][]string{}, byKind: map[string][]string{}}
	for _, p := range universe {
		g.pkgs[nodeName(p.Key)] = p
	}
	g.pkgs[nodeName(pkg.Key)] = pkg
	order := make([]string, 0, len(g.pkgs))
	for n := range g.pkgs {
		order = append(order, n)
	}
	slices.SortFunc(order, func(a, b string) int {
		ka, kb := g.pkgs[a].Key, g.pkgs[b].Key
		return cmp.Or(cmp.Compare(ka.Repository, kb.Repository), cmp.Compare(ka.Package, kb.Package))
	})
	for _, n := range order {
		p := g.pkgs[n]
		if p.Err != nil {
			continue
		}
		for _, d := range p.Dependencies.Provides {
			var idx map[string][]string
			var k string
			switch {
			case d.API != nil:
				idx, k = g.byKind, d.API.Group+"/"+d.API.Kind
			case d.Capability != "":
				idx, k = g.byCapability, d.Capability
			default:
				continue
			}
			if l := idx[k]; len(l) == 0 || l[len(l)-1] != n {
				idx[k] = append(l, n)
			}
		}
	}
	return g
}

// Provides reports whether p provides the api or capability req requires
// (whatever package req pins). It is false for a requirement of a package
// alone, and for a Package with Err.
func (p Package) Provides(req revision.Dependency) bool { return provides(p, req) }

func provides(p Package, req revision.Dependency) bool {
	if p.Err != nil {
		return false
	}
	for _, d := range p.Dependencies.Provides {
		switch {
		case req.API != nil && d.API != nil && d.API.Satisfies(*req.API):
			return true
		case req.Capability != "" && d.Capability == req.Capability:
			return true
		}
	}
	return false
}

func (g *graph) bind(p Package) []Binding {
	if p.Err != nil {
		return nil
	}
	out := make([]Binding, 0, len(p.Dependencies.Requires))
	for _, req := range p.Dependencies.Requires {
		out = append(out, g.bindOne(p, req))
	}
	return out
}

func (g *graph) bindOne(p Package, req revision.Dependency) Binding {
	b := Binding{Requirement: req, Status: Missing}
	found := func(keys ...revision.Key) Binding {
		b.Candidates = keys
		b.Provider = keys[0]
		b.Status = Satisfied
		if len(keys) > 1 {
			b.Status = Ambiguous
		}
		return b
	}
	if ref := req.Package; ref != nil {
		b.Explicit = true
		repo := cmp.Or(ref.Repository, p.Key.Repository)
		target, ok := g.pkgs[repo+":"+ref.Name]
		switch {
		case !ok:
			b.Reason = fmt.Sprintf("no published revision of %s:%s", repo, ref.Name)
		case req.API == nil && req.Capability == "" && !ref.MatchesRevision(target.Key.Revision):
			b.Reason = fmt.Sprintf("%s does not satisfy revision %s", target.Key, ref.Revision)
		case (req.API != nil || req.Capability != "") && !provides(target, req):
			b.Reason = fmt.Sprintf("%s does not provide it", target.Key)
			if target.Err != nil {
				b.Reason = fmt.Sprintf("%s: %v", target.Key, target.Err)
			}
		case req.API != nil || req.Capability != "":
			if !ref.MatchesRevision(target.Key.Revision) {
				b.Reason = fmt.Sprintf("%s does not satisfy revision %s", target.Key, ref.Revision)
				return b
			}
			return found(target.Key)
		default:
			return found(target.Key)
		}
		return b
	}
	if provides(p, req) {
		return found(p.Key)
	}
	candidates := g.byCapability[req.Capability]
	if req.API != nil {
		candidates = g.byKind[req.API.Group+"/"+req.API.Kind]
	}
	var keys []revision.Key
	for _, n := range candidates {
		if q := g.pkgs[n]; q.Key.Repository == p.Key.Repository && provides(q, req) {
			keys = append(keys, q.Key)
		}
	}
	for _, n := range candidates {
		if q := g.pkgs[n]; q.Key.Repository != p.Key.Repository && provides(q, req) {
			keys = append(keys, q.Key)
		}
	}
	if len(keys) == 0 {
		b.Reason = "nothing provides it"
		return b
	}
	return found(keys...)
}

// edges returns the packages n's requirements bind to, without n itself
// unless n requires its own package.
func (g *graph) edges(n string) []string {
	p := g.pkgs[n]
	var out []string
	for _, b := range g.bind(p) {
		if b.Status == Missing {
			continue
		}
		to := nodeName(b.Provider)
		if to == n && b.Requirement.Package == nil {
			continue // provides what it requires
		}
		if !slices.Contains(out, to) {
			out = append(out, to)
		}
	}
	return out
}

// cycles returns the cycles reachable from start: Tarjan's strongly
// connected components of more than one package, or of one that requires
// itself.
func (g *graph) cycles(start revision.Key) [][]revision.Key {
	adj := map[string][]string{}
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var sccs [][]string
	next := 0
	var visit func(n string)
	visit = func(n string) {
		index[n], low[n] = next, next
		next++
		stack = append(stack, n)
		onStack[n] = true
		adj[n] = g.edges(n)
		for _, m := range adj[n] {
			if _, seen := index[m]; !seen {
				visit(m)
				low[n] = min(low[n], low[m])
			} else if onStack[m] {
				low[n] = min(low[n], index[m])
			}
		}
		if low[n] == index[n] {
			var scc []string
			for {
				m := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[m] = false
				scc = append(scc, m)
				if m == n {
					break
				}
			}
			if len(scc) > 1 || slices.Contains(adj[n], n) {
				sccs = append(sccs, scc)
			}
		}
	}
	visit(nodeName(start))
	var out [][]revision.Key
	for _, scc := range sccs {
		out = append(out, g.walk(scc, adj, nodeName(start)))
	}
	slices.SortFunc(out, func(a, b []revision.Key) int { return cmp.Compare(nodeName(a[0]), nodeName(b[0])) })
	return out
}

// walk orders the packages of one strongly connected component along its
// requirements, from start when start is in it (else from the first by
// name); packages the walk does not reach are appended by name.
func (g *graph) walk(scc []string, adj map[string][]string, start string) []revision.Key {
	slices.Sort(scc)
	if !slices.Contains(scc, start) {
		start = scc[0]
	}
	var path []string
	seen := map[string]bool{}
	for n := start; n != "" && !seen[n]; {
		seen[n] = true
		path = append(path, n)
		next := ""
		for _, m := range adj[n] {
			if slices.Contains(scc, m) && !seen[m] {
				next = m
				break
			}
		}
		n = next
	}
	for _, n := range scc {
		if !seen[n] {
			path = append(path, n)
		}
	}
	keys := make([]revision.Key, len(path))
	for i, n := range path {
		keys[i] = g.pkgs[n].Key
	}
	return keys
}
