package fnruntime

import (
	"errors"
	"testing"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// execStarlark runs src as the starlark function does, rewritten for the
// guards or not, and returns its error.
func execStarlark(t *testing.T, src string, guarded bool) error {
	t.Helper()
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	f, err := opts.Parse("script.star", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	thread := &starlark.Thread{Load: starlarkLoad}
	predeclared := starlark.StringDict{}
	if guarded {
		budget := newStarlarkBudget("script", DefaultStarlarkMemory, thread.Cancel)
		thread.SetLocal(starlarkBudgetKey, budget)
		predeclared = guardPredeclared(budget)
		rewriteStarlark(f)
	}
	prog, err := starlark.FileProgram(f, predeclared.Has)
	if err != nil {
		t.Fatal(err)
	}
	_, err = prog.Init(thread, predeclared)
	return err
}

// The rewrite keeps the script's positions and messages: a failing
// operation, guarded or not, is reported with the same message at the
// same line and column, with the same user frames.
func TestStarlarkRewriteKeepsPositions(t *testing.T) {
	for _, src := range []string{
		"x = 1\ny = [1] + 2\n",
		"def f(a):\n    return a * 'x' + 1\nf(2)\n",
		"s = 'a'\nt = s.join(1)\n",
		"s = 'a'\nj = s.join\nj([1])\n",
		"d = {}\nd[[1]] = 2\n",
		"l = [1, 2]\nl += 3\n",
		"l = (1, 2)\nl *= 'x'\n",
		"x = 'abc'\ny = x[::0]\n",
		"x = 3\ny = x[1:2]\n",
		"x = {'a': 1}\nx.update(1, 2, 3)\n",
		"x = 'a %s %s' % (1,)\n",
		"s = '%d'\ns %= 'x'\n",
		"x = [1, 2, 3]\nfor i in x:\n    x += [i]\n",
		"x = str([1]) + repr(2) + 3\n",
		"x = {1: 2} | [3]\n",
		"print(1 + None)\n",
		"x = 1\nx.append(2)\n",
	} {
		want := execStarlark(t, src, false)
		got := execStarlark(t, src, true)
		var we, ge *starlark.EvalError
		if !errors.As(want, &we) || !errors.As(got, &ge) {
			if (want == nil) != (got == nil) || want != nil && want.Error() != got.Error() {
				t.Errorf("%q: got %v, want %v", src, got, want)
			}
			continue
		}
		if ge.Msg != we.Msg {
			t.Errorf("%q: message %q, want %q", src, ge.Msg, we.Msg)
		}
		userFrames := func(s starlark.CallStack) []string {
			var out []string
			for _, fr := range s {
				if fr.Pos.Filename() == "script.star" {
					out = append(out, fr.Name+"@"+fr.Pos.String())
				}
			}
			return out
		}
		if g, w := userFrames(ge.CallStack), userFrames(we.CallStack); len(g) != len(w) || len(g) == 0 || g[len(g)-1] != w[len(w)-1] {
			t.Errorf("%q: frames %v, want %v", src, g, w)
		}
	}
}
