package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"
)

// newTabWriter returns kubectl's table writer: columns padded by three
// spaces, the last column not padded.
func newTabWriter(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 6, 4, 3, ' ', 0)
}

// printTable writes a kubectl-style table.
func printTable(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	tw := newTabWriter(w)
	if !noHeaders {
		fmt.Fprintln(tw, strings.Join(header, "\t"))
	}
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// outputFormat is a parsed -o value.
type outputFormat struct {
	kind string // "", "wide", "yaml", "json", "name", "custom-columns", "jsonpath"
	arg  string
}

func parseOutput(s string) (outputFormat, error) {
	switch s {
	case "", "wide", "yaml", "json", "name":
		return outputFormat{kind: s}, nil
	}
	for _, k := range []string{"custom-columns", "jsonpath"} {
		if arg, ok := strings.CutPrefix(s, k+"="); ok {
			if arg == "" {
				return outputFormat{}, usagef("-o %s needs a value", k)
			}
			return outputFormat{kind: k, arg: arg}, nil
		}
	}
	return outputFormat{}, usagef("unable to match a printer suitable for the output format %q, allowed formats are: custom-columns,json,jsonpath,name,wide,yaml", s)
}

// printObjects prints API objects in a non-table format. single says that
// one object was asked for by name, so yaml and json print it alone rather
// than in a List; resource is the name prefix of -o name.
func printObjects[T any](w io.Writer, f outputFormat, objs []T, single bool, resource string, noHeaders bool, name func(T) string) error {
	switch f.kind {
	case "yaml", "json":
		var v any = objs
		if single && len(objs) == 1 {
			v = objs[0]
		} else {
			items := make([]any, len(objs))
			for i := range objs {
				items[i] = objs[i]
			}
			v = map[string]any{"apiVersion": "v1", "kind": "List", "items": items, "metadata": map[string]any{"resourceVersion": ""}}
		}
		data, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if f.kind == "json" {
			// Through a generic value, so that keys are sorted as
			// kubectl prints them.
			doc, err := toGeneric(v)
			if err != nil {
				return err
			}
			out, err := json.MarshalIndent(doc, "", "    ")
			if err != nil {
				return err
			}
			_, err = w.Write(append(out, '\n'))
			return err
		}
		out, err := yaml.JSONToYAML(data)
		if err != nil {
			return err
		}
		_, err = w.Write(out)
		return err
	case "name":
		for _, o := range objs {
			fmt.Fprintf(w, "%s/%s\n", resource, name(o))
		}
		return nil
	case "custom-columns":
		cols, err := parseColumns(f.arg)
		if err != nil {
			return err
		}
		var header []string
		for _, c := range cols {
			header = append(header, c.name)
		}
		var rows [][]string
		for _, o := range objs {
			doc, err := toGeneric(o)
			if err != nil {
				return err
			}
			var row []string
			for _, c := range cols {
				v, ok := lookupPath(doc, c.path)
				if !ok {
					row = append(row, "<none>")
					continue
				}
				row = append(row, formatValue(v))
			}
			rows = append(rows, row)
		}
		return printTable(w, header, rows, noHeaders)
	case "jsonpath":
		for _, o := range objs {
			doc, err := toGeneric(o)
			if err != nil {
				return err
			}
			s, err := evalTemplate(f.arg, doc)
			if err != nil {
				return err
			}
			fmt.Fprintln(w, s)
		}
		return nil
	}
	return fmt.Errorf("output format %q is not supported here", f.kind)
}

type column struct{ name, path string }

func parseColumns(spec string) ([]column, error) {
	var cols []column
	for _, part := range strings.Split(spec, ",") {
		name, path, ok := strings.Cut(part, ":")
		if !ok || name == "" || path == "" {
			return nil, usagef("custom-columns format must be NAME:PATH[,NAME:PATH...], got %q", spec)
		}
		path = strings.TrimSuffix(strings.TrimPrefix(path, "{"), "}")
		cols = append(cols, column{name: name, path: path})
	}
	return cols, nil
}

func toGeneric(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var doc any
	d := json.NewDecoder(bytes.NewReader(data))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return nil, err
	}
	return doc, nil
}

// evalTemplate evaluates a kubectl jsonpath template: literal text with
// {.field.path} expressions.
func evalTemplate(tmpl string, doc any) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "{")
		if i < 0 {
			b.WriteString(tmpl)
			return b.String(), nil
		}
		j := strings.Index(tmpl[i:], "}")
		if j < 0 {
			return "", usagef("unclosed action in jsonpath template %q", tmpl)
		}
		b.WriteString(tmpl[:i])
		expr := strings.TrimSpace(tmpl[i+1 : i+j])
		if v, ok := lookupPath(doc, expr); ok {
			b.WriteString(formatValue(v))
		}
		tmpl = tmpl[i+j+1:]
	}
}

// lookupPath follows a JSONPath-like path (".a.b[0].c", dots in keys
// escaped as "\.") through decoded JSON.
func lookupPath(doc any, path string) (any, bool) {
	path = strings.TrimPrefix(path, "$")
	if path == "" || path == "." {
		return doc, true
	}
	cur := doc
	for _, seg := range splitPath(path) {
		name, idx := seg, -1
		if k := strings.Index(seg, "["); k >= 0 && strings.HasSuffix(seg, "]") {
			n, err := strconv.Atoi(seg[k+1 : len(seg)-1])
			if err != nil {
				return nil, false
			}
			name, idx = seg[:k], n
		}
		if name != "" {
			m, ok := cur.(map[string]any)
			if !ok {
				return nil, false
			}
			if cur, ok = m[name]; !ok {
				return nil, false
			}
		}
		if idx >= 0 {
			l, ok := cur.([]any)
			if !ok || idx >= len(l) {
				return nil, false
			}
			cur = l[idx]
		}
	}
	return cur, true
}

func splitPath(path string) []string {
	var segs []string
	var cur strings.Builder
	for i := 0; i < len(path); i++ {
		switch {
		case path[i] == '\\' && i+1 < len(path):
			i++
			cur.WriteByte(path[i])
		case path[i] == '.':
			if cur.Len() > 0 {
				segs = append(segs, cur.String())
				cur.Reset()
			}
		default:
			cur.WriteByte(path[i])
		}
	}
	if cur.Len() > 0 {
		segs = append(segs, cur.String())
	}
	return segs
}

func formatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "<none>"
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	}
	data, _ := json.Marshal(v)
	return string(data)
}
