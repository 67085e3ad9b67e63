package fnruntime_test

import (
	"context"
	"errors"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"testing"
	"time"

	"github.com/configasdata/cad/fnruntime"
	"github.com/configasdata/cad/internal/peakmem"
	"github.com/configasdata/cad/revision"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// starlarkAttacks are scripts of issue 30 and its kin: each asks for far
// more memory than the default bound of 256 MiB, most in a handful of
// steps (before the guards, list doubling reached 8.4 GB and string
// doubling 4.2 GB).
var starlarkAttacks = []struct{ name, script string }{
	{"list doubling", "x = [1] * (1 << 20)\nfor i in range(8):\n    x = x + x\n"},
	{"string doubling", "x = 'x' * (1 << 20)\nfor i in range(11):\n    x = x + x\n"},
	{"augmented doubling", "x = 'x' * (1 << 20)\nfor i in range(11):\n    x += x\n"},
	{"list range", "x = list(range(1 << 28))\n"},
	{"list repeat", "x = [1] * (1 << 28)\n"},
	{"string repeat", "x = 'abcd' * (1 << 28)\n"},
	{"int squaring", "x = 3\nfor i in range(40):\n    x = x * x\n"},
	{"shared str", "x = [1]\nfor i in range(40):\n    x = [x, x]\ns = str(x)\n"},
	{"shared repr in percent", "x = ('ab',)\nfor i in range(40):\n    x = (x, x)\ns = '%s' % (x,)\n"},
	{"shared print", "x = {'a': 1}\nfor i in range(40):\n    x = {'a': x, 'b': x}\nprint(x)\n"},
	{"shared items", "x = ['a']\nfor i in range(40):\n    x = [x, x]\nctx.resource_list['items'][0]['data'] = {'x': x}\n"},
	{"extend in a loop", "x = [1] * 1024\nfor i in range(30):\n    x.extend(x)\n"},
	{"extend kept method", "x = [1] * 1024\ne = x.extend\nfor i in range(30):\n    e(x)\n"},
	{"join", "l = ['x' * 4096] * (1 << 18)\ns = ','.join(l)\n"},
	{"replace", "s = 'ab' * 1024\nfor i in range(20):\n    s = s.replace('a', 'aa')\n"},
	{"replace empty", "s = 'x' * 1024\ns = s.replace('', s)\ns = s.replace('', s)\n"},
	{"format", "s = 'x' * 1024\nfor i in range(20):\n    s = '{0}{0}'.format(s)\n"},
	{"percent", "s = 'x' * 1024\nfor i in range(20):\n    s = '%s%s' % (s, s)\n"},
	{"percent assign", "s = 'x' * 1024\nfor i in range(20):\n    t = '%s%s'\n    t %= (s, s)\n    s = t\n"},
	{"split", "s = ',' * (1 << 24)\nl = s.split(',')\n"},
	{"elems", "s = 'x' * (1 << 24)\nl = list(s.elems())\n"},
	{"json encode", "load('encoding/json.star', 'json')\nx = [1]\nfor i in range(40):\n    x = [x, x]\ns = json.encode(x)\n"},
	{"slice copies", "x = [1] * (1 << 21)\nl = [x[:] for i in range(100)]\n"},
	{"reversed slices", "x = 'x' * (1 << 22)\nl = [x[::-1] for i in range(100)]\n"},
	{"gradual append", "l = []\nfor i in range(100000000):\n    l.append('x' * 100 + str(i))\n"},
	{"gradual dict", "d = {}\nfor i in range(100000000):\n    d[str(i)] = i\n"},
}

// TestStarlarkMemoryAttacks runs each attack in a child process and
// checks that it is refused with an error matching ErrMemoryLimit and
// revision.ErrLimit, and that the child's memory grew by far less than
// the attack asks for: under 400 MiB for the default bound of 256 MiB
// (the two attacks), under twice the bound for a bound of 64
// MiB (the others, which then take less time).
func TestStarlarkMemoryAttacks(t *testing.T) {
	for i, a := range starlarkAttacks {
		t.Run(a.name, func(t *testing.T) {
			var limit, budget int64 = 64 << 20, 128 << 20
			if i < 2 {
				limit, budget = fnruntime.DefaultStarlarkMemory, 400<<20
			}
			res := peakmem.Measure(t, raceFactor<<30, func(t *testing.T) {
				rl := starlarkList(t, a.script)
				err := (&fnruntime.StarlarkFunction{MaxMemory: limit}).Run(context.Background(), rl)
				if !errors.Is(err, fnruntime.ErrMemoryLimit) || !errors.Is(err, revision.ErrLimit) {
					t.Fatalf("got %v (%v), want ErrMemoryLimit and revision.ErrLimit", err, rl.Results)
				}
				t.Logf("refused: %s", rl.Results[0].Message)
			})
			t.Logf("growth %d MiB", res.Growth()>>20)
			budget *= raceFactor // the race detector's shadow memory
			if res.Killed || res.Growth() > budget {
				t.Errorf("grew by %d MiB (killed %v), want under %d MiB:\n%s", res.Growth()>>20, res.Killed, budget>>20, res.Output)
			}
		})
	}
}

// TestStarlarkStepLimitIsLimitError: the step limit's failure matches
// revision.ErrLimit and ErrStepLimit.
func TestStarlarkStepLimitIsLimitError(t *testing.T) {
	rl := starlarkList(t, "x = 0\nwhile True:\n    x += 1\n")
	err := (&fnruntime.StarlarkFunction{MaxSteps: 10_000}).Run(context.Background(), rl)
	var le *revision.LimitError
	if !errors.Is(err, fnruntime.ErrStepLimit) || !errors.Is(err, revision.ErrLimit) || !errors.As(err, &le) || le.Max != 10_000 {
		t.Fatalf("got %v, want a *revision.LimitError of 10000 steps", err)
	}
}

// The guards keep the semantics of what they guard: += on a list extends
// it in place, %= formats, methods kept in a variable work, and a script
// that stays under the bound (a few MB of strings, lists and dicts) is
// not refused.
func TestStarlarkGuardsKeepSemantics(t *testing.T) {
	rl := starlarkList(t, `
load("encoding/json.star", "json")
load("time.star", "time")
a = [1]
b = a
a += [2, 3]
if b != [1, 2, 3]:
    fail("+= not in place: %s" % b)
a *= 2
if b != [1, 2, 3] or a != [1, 2, 3, 1, 2, 3]:
    fail("*=: %s %s" % (a, b))
s = "%s-%d"
s %= ("x", 4)
d = {"k": ["%s"]}
d["k"][0] %= "y"
j = ",".join
big = j(["ab" * 1000] * 2000)
parts = big.split(",")
t = time.parse_duration("1s")
t += time.parse_duration("2s")
m = {"a": 1} | {"b": 2}
m |= {"c": 3}
st = "{} {name}".format(1, name = "n") + str([1, (2,), {"x": None}])
x = (1, 2) + (3,)
n = 2 * 3 + 10 % 4
r = repr("q") * 3 + "%r" % ("q",)
e = json.encode({"a": [1, 2]})
sl = "abcdef"[::-2] + "abcdef"[-2:] + str([1, 2, 3][len("x"):]) + "abc"[5:1]
ctx.resource_list["items"][0]["data"] = {
    "s": s, "k": d["k"][0], "len": len(big), "parts": len(parts), "t": str(t), "m": str(sorted(m.keys())),
    "st": st, "x": str(x), "n": n, "r": r, "e": e, "u": "a b".upper(), "sl": sl, "l": str(list(enumerate("ab".elems()))),
}
`)
	if err := (&fnruntime.StarlarkFunction{}).Run(context.Background(), rl); err != nil {
		t.Fatalf("%v: %v", err, rl.Results)
	}
	got, err := rl.Items[0].Pipe(yaml.Lookup("data"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"s": "x-4", "k": "y", "len": "4001999", "parts": "2000", "t": "3s", "m": `["a", "b", "c"]`,
		"st": `1 n[1, (2,), {"x": None}]`, "x": "(1, 2, 3)", "n": "8", "r": `"q""q""q""q"`, "e": `{"a":[1,2]}`, "u": "A B",
		"l": `[(0, "a"), (1, "b")]`, "sl": "fdbef[2, 3]"}
	for k, v := range want {
		if f := got.Field(k); f == nil || f.Value.YNode().Value != v {
			t.Errorf("data.%s = %v, want %q", k, f, v)
		}
	}
}

// FuzzStarlarkScript runs scripts under a bound of 16 MiB and fails when
// the heap grows by more than four times that while one runs (sampled
// every millisecond), or when a run that was refused for memory does not
// say so with ErrMemoryLimit. The seeds are the attacks.
func FuzzStarlarkScript(f *testing.F) {
	for _, a := range starlarkAttacks {
		f.Add(a.script)
	}
	f.Add("x = [1, 2]\nx += x\ns = ','.join([str(i) for i in x])\n")
	const limit = 16 << 20
	f.Fuzz(func(t *testing.T, script string) {
		runtime.GC()
		sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		read := func() uint64 {
			metrics.Read(sample)
			return sample[0].Value.Uint64()
		}
		base := read()
		var peak atomic.Uint64
		quit, done := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(done)
			for {
				if h := read(); h > peak.Load() {
					peak.Store(h)
				}
				select {
				case <-quit:
					return
				case <-time.After(time.Millisecond):
				}
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		rl := starlarkList(t, script)
		err := (&fnruntime.StarlarkFunction{MaxMemory: limit, MaxSteps: 1_000_000}).Run(ctx, rl)
		close(quit)
		<-done
		if grew := int64(peak.Load()) - int64(base); grew > 4*limit {
			t.Fatalf("the heap grew by %d MiB under a bound of %d MiB (err %v)", grew>>20, limit>>20, err)
		}
		if errors.Is(err, fnruntime.ErrMemoryLimit) && !errors.Is(err, revision.ErrLimit) {
			t.Fatalf("%v matches ErrMemoryLimit, not revision.ErrLimit", err)
		}
	})
}
