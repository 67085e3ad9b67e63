// Command fn is the KRM function the wasmfn tests build with GOOS=wasip1
// GOARCH=wasm. With no argument it reads the ResourceList on stdin and
// sets an annotation on every item: the functionConfig's data.key
// (wasm.cad.dev/ran without one) to its data.value ("true" without one),
// or to the text of the file data.file names (which a mount must give
// it: the module has no file system otherwise). An argument makes it
// hostile: loop spins forever, hog allocates until it is stopped, flood
// writes 1 GiB to stdout, fail exits 3 with a message on stderr.
package main

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

func main() {
	mode := ""
	if len(os.Args) > 1 {
		mode = os.Args[1]
	}
	switch mode {
	case "loop":
		n := 0
		for {
			n++
		}
	case "hog":
		var keep [][]byte
		for {
			b := make([]byte, 1<<20)
			for i := range b {
				b[i] = byte(i)
			}
			keep = append(keep, b)
		}
	case "flood":
		line := bytes.Repeat([]byte("x"), 1<<20)
		for range 1024 {
			os.Stdout.Write(line) // errors ignored: a hostile function goes on
		}
	case "fail":
		fmt.Fprintln(os.Stderr, "failing on purpose")
		os.Exit(3)
	default:
		if err := annotate(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

func annotate(in io.Reader, out io.Writer) error {
	var doc yaml.Node
	if err := yaml.NewDecoder(in).Decode(&doc); err != nil {
		return err
	}
	root := doc.Content[0]
	key, value := "wasm.cad.dev/ran", "true"
	data := lookup(lookup(root, "functionConfig"), "data")
	if v := lookup(data, "key"); v != nil {
		key = v.Value
	}
	if v := lookup(data, "value"); v != nil {
		value = v.Value
	}
	if v := lookup(data, "file"); v != nil {
		b, err := os.ReadFile(v.Value)
		if err != nil {
			return err
		}
		value = string(bytes.TrimSpace(b))
	}
	items := lookup(root, "items")
	if items == nil {
		return fmt.Errorf("no items")
	}
	for _, it := range items.Content {
		md := lookup(it, "metadata")
		ann := lookup(md, "annotations")
		if ann == nil {
			ann = &yaml.Node{Kind: yaml.MappingNode}
			md.Content = append(md.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "annotations"}, ann)
		}
		if v := lookup(ann, key); v != nil {
			v.Value = value
			continue
		}
		ann.Content = append(ann.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: key},
			&yaml.Node{Kind: yaml.ScalarNode, Value: value, Style: yaml.DoubleQuotedStyle})
	}
	enc := yaml.NewEncoder(out)
	enc.SetIndent(2)
	return enc.Encode(&doc)
}

func lookup(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
