package fnruntime

import (
	"context"
	"crypto/md5"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	starlarkjson "go.starlark.net/lib/json"
	starlarkmath "go.starlark.net/lib/math"
	starlarktime "go.starlark.net/lib/time"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"sigs.k8s.io/kustomize/kyaml/openapi"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/configasdata/cad/revision"
)

// starlarkUnavailable are the catalog's starlark libraries (qri-io's
// starlib) cad does not provide in-process: they parse HTML, spreadsheets
// or archives, or reach the network.
var starlarkUnavailable = map[string]bool{
	"bsoup.star": true, "encoding/csv.star": true, "geo.star": true, "html.star": true,
	"http.star": true, "re.star": true, "xlsx.star": true, "zipfile.star": true,
}

// starlarkLoad resolves load() as the catalog's starlark function does,
// for the libraries cad implements: encoding/json.star, math.star and
// time.star (go.starlark.net's), encoding/base64.star, encoding/yaml.star,
// hash.star and krmfn.star.
func starlarkLoad(_ *starlark.Thread, module string) (starlark.StringDict, error) {
	switch module {
	case "encoding/json.star":
		return starlark.StringDict{"json": guardModule(starlarkjson.Module, map[string]guardedCall{
			"encode": renderCost(builderFactor), "decode": decodeCost, "indent": jsonIndentCost})}, nil
	case "math.star":
		return starlark.StringDict{"math": starlarkmath.Module}, nil
	case "time.star":
		return starlark.StringDict{"time": starlarktime.Module}, nil
	case "encoding/base64.star":
		return guardModules(module1("base64", map[string]builtinFn{"encode": base64Encode, "decode": base64Decode}),
			map[string]guardedCall{"encode": stringArgCost(2)}), nil
	case "encoding/yaml.star":
		return guardModules(module1("yaml", map[string]builtinFn{"loads": yamlLoads, "dumps": yamlDumps}),
			map[string]guardedCall{"loads": decodeCost, "dumps": renderCost(4)}), nil
	case "hash.star":
		return module1("hash", map[string]builtinFn{"md5": hashFn("md5"), "sha1": hashFn("sha1"), "sha256": hashFn("sha256")}), nil
	case "krmfn.star":
		return module1("krmfn", map[string]builtinFn{"match_gvk": krmMatchGVK, "match_name": krmMatchField("match_name", "name"),
			"match_namespace": krmMatchField("match_namespace", "namespace")}), nil
	}
	if starlarkUnavailable[module] {
		return nil, fmt.Errorf("load(%q): this library of the catalog's starlark function is not available in-process", module)
	}
	return nil, fmt.Errorf("load(%q): no such module", module)
}

// guardModule returns a copy of m whose members named in costs are
// guarded (see guardBuiltin).
func guardModule(m *starlarkstruct.Module, costs map[string]guardedCall) *starlarkstruct.Module {
	members := make(starlark.StringDict, len(m.Members))
	for k, v := range m.Members {
		if b, ok := v.(*starlark.Builtin); ok && costs[k] != nil {
			v = guardBuiltin(b, costs[k])
		}
		members[k] = v
	}
	return &starlarkstruct.Module{Name: m.Name, Members: members}
}

// guardModules guards the members of the modules of d.
func guardModules(d starlark.StringDict, costs map[string]guardedCall) starlark.StringDict {
	for k, v := range d {
		if m, ok := v.(*starlarkstruct.Module); ok {
			d[k] = guardModule(m, costs)
		}
	}
	return d
}

// renderCost is the cost of encoding the first argument (JSON, YAML):
// factor times its rendering.
func renderCost(factor int64) guardedCall {
	return func(b *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 0 {
			return 0, nil
		}
		n, err := renderSize(args[0], b.limit)
		return sizeMul(n, factor), err
	}
}

// decodeCost is the cost of decoding a JSON or YAML string into values:
// two bytes of source ("0,") may become an element of 16 bytes and an
// empty list of three ("[],") one of 56; 20 times the source.
func decodeCost(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
	if len(args) == 0 {
		return 0, nil
	}
	s, _ := starlark.AsString(args[0])
	return sizeMul(int64(len(s)), 20), nil
}

// stringArgCost is the cost of an encoding of the first argument that is
// at most factor times as long.
func stringArgCost(factor int64) guardedCall {
	return func(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, _ []starlark.Tuple) (int64, error) {
		if len(args) == 0 {
			return 0, nil
		}
		s, _ := starlark.AsString(args[0])
		return sizeMul(int64(len(s)), factor), nil
	}
}

// jsonIndentCost bounds json.indent(str, prefix=, indent=): each of the
// (at most) one line per byte gets the prefix and one indent per level.
func jsonIndentCost(_ *starlarkBudget, _ starlark.Value, args starlark.Tuple, kwargs []starlark.Tuple) (int64, error) {
	if len(args) == 0 {
		return 0, nil
	}
	s, _ := starlark.AsString(args[0])
	var prefix, indent int64
	for _, kv := range kwargs {
		v, _ := starlark.AsString(kv[1])
		switch k, _ := starlark.AsString(kv[0]); k {
		case "prefix":
			prefix = int64(len(v))
		case "indent":
			indent = int64(len(v))
		}
	}
	// Count the lines and the deepest nesting, outside strings.
	var lines, depth, deepest int64 = 1, 0, 0
	inString, escaped := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '[' || c == '{':
			depth++
			deepest = max(deepest, depth)
			lines += 2
		case c == ']' || c == '}':
			depth--
		case c == ',':
			lines++
		}
	}
	return sizeAdd(sizeMul(int64(len(s)), 2), sizeMul(lines, sizeAdd(prefix+1, sizeMul(deepest, indent)))), nil
}

type builtinFn = func(*starlark.Thread, *starlark.Builtin, starlark.Tuple, []starlark.Tuple) (starlark.Value, error)

func module1(name string, fns map[string]builtinFn) starlark.StringDict {
	members := starlark.StringDict{}
	for k, f := range fns {
		members[k] = starlark.NewBuiltin(name+"."+k, f)
	}
	return starlark.StringDict{name: &starlarkstruct.Module{Name: name, Members: members}}
}

func base64Encoding(name string) (*base64.Encoding, error) {
	switch name {
	case "", "standard":
		return base64.StdEncoding, nil
	case "standard_raw":
		return base64.RawStdEncoding, nil
	case "url":
		return base64.URLEncoding, nil
	case "url_raw":
		return base64.RawURLEncoding, nil
	}
	return nil, fmt.Errorf("unsupported encoding format: %q", name)
}

func base64Encode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data, encoding string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &data, "encoding?", &encoding); err != nil {
		return nil, err
	}
	enc, err := base64Encoding(encoding)
	if err != nil {
		return nil, err
	}
	return starlark.String(enc.EncodeToString([]byte(data))), nil
}

func base64Decode(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var data, encoding string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "data", &data, "encoding?", &encoding); err != nil {
		return nil, err
	}
	enc, err := base64Encoding(encoding)
	if err != nil {
		return nil, err
	}
	out, err := enc.DecodeString(data)
	if err != nil {
		return nil, err
	}
	return starlark.String(out), nil
}

// yamlLoads is yaml.loads(source): the value of the first YAML document
// of source. A source over the default revision.YAMLLimits fails the
// script with the *revision.YAMLLimitError.
func yamlLoads(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var src string
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "source", &src); err != nil {
		return nil, err
	}
	// The node is converted with its aliases expanded: hold the source to
	// the default bounds first, so an alias bomb is refused, not built.
	if err := revision.CheckYAML(context.Background(), b.Name()+" source", []byte(src), nil); err != nil {
		return nil, err
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(src), &n); err != nil {
		return nil, err
	}
	return nodeToStarlark(&n)
}

func yamlDumps(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var v starlark.Value
	if err := starlark.UnpackArgs(b.Name(), args, kwargs, "obj", &v); err != nil {
		return nil, err
	}
	data, err := starlarkToData(v)
	if err != nil {
		return nil, err
	}
	out, err := yaml.Marshal(data)
	if err != nil {
		return nil, err
	}
	return starlark.String(out), nil
}

func hashFn(algo string) builtinFn {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var s string
		if err := starlark.UnpackArgs(b.Name(), args, kwargs, "string", &s); err != nil {
			return nil, err
		}
		var sum []byte
		switch algo {
		case "md5":
			h := md5.Sum([]byte(s))
			sum = h[:]
		case "sha1":
			h := sha1.Sum([]byte(s))
			sum = h[:]
		default:
			h := sha256.Sum256([]byte(s))
			sum = h[:]
		}
		return starlark.String(hex.EncodeToString(sum)), nil
	}
}

// resourceField returns a resource dict's top-level or metadata string
// field.
func resourceField(res starlark.Value, path ...string) string {
	var v starlark.Value = res
	for _, p := range path {
		m, ok := v.(starlark.Mapping)
		if !ok {
			return ""
		}
		next, found, err := m.Get(starlark.String(p))
		if err != nil || !found {
			return ""
		}
		v = next
	}
	s, _ := starlark.AsString(v)
	return s
}

func krmMatchGVK(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var res starlark.Value
	var apiVersion, kind string
	if err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 3, &res, &apiVersion, &kind); err != nil {
		return nil, err
	}
	return starlark.Bool(resourceField(res, "apiVersion") == apiVersion && resourceField(res, "kind") == kind), nil
}

func krmMatchField(name, field string) builtinFn {
	return func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
		var res starlark.Value
		var want string
		if err := starlark.UnpackPositionalArgs(name, args, kwargs, 2, &res, &want); err != nil {
			return nil, err
		}
		return starlark.Bool(resourceField(res, "metadata", field) == want), nil
	}
}

// lazyOpenAPI is ctx.open_api: kyaml's Kubernetes OpenAPI document (the
// one the catalog's function exposes), converted to Starlark on first
// access.
type lazyOpenAPI struct {
	once sync.Once
	val  *starlark.Dict
	err  error
}

var _ starlark.Mapping = (*lazyOpenAPI)(nil)

func (l *lazyOpenAPI) load() (*starlark.Dict, error) {
	l.once.Do(func() {
		data, err := json.Marshal(openapi.Schema())
		if err != nil {
			l.err = err
			return
		}
		var n yaml.Node
		if err := yaml.Unmarshal(data, &n); err != nil {
			l.err = err
			return
		}
		v, err := nodeToStarlark(&n)
		if err != nil {
			l.err = err
			return
		}
		d, ok := v.(*starlark.Dict)
		if !ok {
			l.err = fmt.Errorf("open_api: the schema is a %s, not a dict", v.Type())
			return
		}
		l.val = d
	})
	return l.val, l.err
}

func (l *lazyOpenAPI) Get(k starlark.Value) (starlark.Value, bool, error) {
	d, err := l.load()
	if err != nil {
		return nil, false, err
	}
	return d.Get(k)
}

func (l *lazyOpenAPI) String() string        { return "<open_api>" }
func (l *lazyOpenAPI) Type() string          { return "dict" }
func (l *lazyOpenAPI) Freeze()               {}
func (l *lazyOpenAPI) Truth() starlark.Bool  { return starlark.True }
func (l *lazyOpenAPI) Hash() (uint32, error) { return 0, fmt.Errorf("unhashable type: dict") }
