// Package yamlstyle writes YAML that reads back as what was written.
//
// The YAML emitter that kyaml wraps (go-yaml v3) writes a string of
// several lines as a literal block scalar. Two such strings do not read
// back: one that begins with a space or a line break, which it writes with
// an indentation indicator that its parser resolves against another
// indentation when the block is in a sequence's mapping, and one that
// begins with a tab, which its parser refuses as indentation.
// Both are ordinary in a function's standard error, which a render records
// in the Kptfile; [Marshal] and [Fix] write them double-quoted instead.
package yamlstyle

import (
	"bytes"
	"crypto/rand"
	"encoding"
	"encoding/hex"
	"reflect"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Marshal encodes v as YAML with the sequence indentation seq, quoting
// the strings a block scalar would not keep. It returns the encoder's
// error when v cannot be encoded.
func Marshal(v any, seq yaml.SequenceIndentStyle) ([]byte, error) {
	n, err := ToNode(v)
	if err != nil {
		return nil, err
	}
	return Encode(n, seq)
}

// ToNode encodes v as a YAML node, as yaml.Node.Encode does, with the
// strings a block scalar would not keep double-quoted. yaml.Node.Encode
// itself writes v as text and parses it back, which fails on such a
// string (or reads it back as another value), so ToNode encodes a copy
// of v in which each of them is a one-line placeholder and puts the
// strings back into the node. It does not modify v. It returns the
// encoder's error.
func ToNode(v any) (*yaml.Node, error) {
	r := &replacer{nonce: nonce()}
	c := r.copy(reflect.ValueOf(v))
	var n yaml.Node
	var err error
	if c.IsValid() {
		err = n.Encode(c.Interface())
	} else {
		err = n.Encode(nil)
	}
	if err != nil {
		return nil, err
	}
	r.restore(&n)
	Fix(&n)
	return &n, nil
}

// replacer copies a value with its risky strings replaced by
// placeholders, and puts them back into the encoded node.
type replacer struct {
	nonce string
	saved []string
}

func nonce() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "cad-yamlstyle-" + hex.EncodeToString(b[:]) + "-"
}

// copy returns a copy of v whose risky strings are placeholders, sharing
// nothing with v that holds one. Values of types that encode themselves
// (yaml.Marshaler, encoding.TextMarshaler) and structs without exported
// fields are kept as they are.
func (r *replacer) copy(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	t := v.Type()
	if t.Implements(marshalerType) || t.Implements(textMarshalerType) || t == nodeType {
		return v
	}
	switch v.Kind() {
	case reflect.String:
		if !Risky(v.String()) {
			return v
		}
		r.saved = append(r.saved, v.String())
		c := reflect.New(t).Elem()
		c.SetString(r.nonce + strconv.Itoa(len(r.saved)-1))
		return c
	case reflect.Pointer:
		if v.IsNil() || v.Elem().Kind() != reflect.Struct && v.Elem().Kind() != reflect.String &&
			v.Elem().Kind() != reflect.Slice && v.Elem().Kind() != reflect.Map && v.Elem().Kind() != reflect.Interface {
			return v
		}
		e := r.copy(v.Elem())
		c := reflect.New(t.Elem())
		c.Elem().Set(e)
		return c
	case reflect.Interface:
		if v.IsNil() {
			return v
		}
		c := reflect.New(t).Elem()
		c.Set(r.copy(v.Elem()))
		return c
	case reflect.Slice:
		if v.IsNil() || t.Elem().Kind() == reflect.Uint8 {
			return v
		}
		c := reflect.MakeSlice(t, v.Len(), v.Len())
		for i := range v.Len() {
			c.Index(i).Set(r.copy(v.Index(i)))
		}
		return c
	case reflect.Array:
		c := reflect.New(t).Elem()
		for i := range v.Len() {
			c.Index(i).Set(r.copy(v.Index(i)))
		}
		return c
	case reflect.Map:
		if v.IsNil() {
			return v
		}
		c := reflect.MakeMapWithSize(t, v.Len())
		it := v.MapRange()
		for it.Next() {
			c.SetMapIndex(r.copy(it.Key()), r.copy(it.Value()))
		}
		return c
	case reflect.Struct:
		exported := false
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				exported = true
			}
		}
		if !exported {
			return v
		}
		c := reflect.New(t).Elem()
		c.Set(v) // unexported fields too; exported ones are replaced below
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				c.Field(i).Set(r.copy(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// restore puts the saved strings back in place of their placeholders.
func (r *replacer) restore(n *yaml.Node) {
	if len(r.saved) == 0 {
		return
	}
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind == yaml.ScalarNode {
			if rest, ok := strings.CutPrefix(n.Value, r.nonce); ok {
				if i, err := strconv.Atoi(rest); err == nil && i >= 0 && i < len(r.saved) {
					n.Value = r.saved[i]
					n.Tag = "!!str"
				}
			}
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(n)
}

var (
	marshalerType     = reflect.TypeFor[yaml.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
	nodeType          = reflect.TypeFor[yaml.Node]()
)

// Encode writes the node n with the sequence indentation seq. It returns
// the encoder's error.
func Encode(n *yaml.Node, seq yaml.SequenceIndentStyle) ([]byte, error) {
	var buf bytes.Buffer
	enc := yaml.NewEncoderWithOptions(&buf, &yaml.EncoderOptions{SeqIndent: seq})
	if err := enc.Encode(n); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Fix sets the style of every string scalar under n that a block scalar
// would not keep to double-quoted. It changes no value.
func Fix(n *yaml.Node) {
	if n == nil {
		return
	}
	if n.Kind == yaml.ScalarNode && n.Tag != "!!binary" && Risky(n.Value) {
		n.Style = yaml.DoubleQuotedStyle
	}
	for _, c := range n.Content {
		Fix(c)
	}
}

// Risky reports whether s, written as a block scalar, may not read back:
// it has several lines and begins with a space, a tab or a line break.
// The emitter writes such a string with an indentation indicator, which
// the parser resolves against another indentation inside a sequence's
// mappings, or with a tab where the parser wants indentation. Other
// strings keep the emitter's style, as kpt writes them.
func Risky(s string) bool {
	if !strings.Contains(s, "\n") {
		return false
	}
	switch s[0] {
	case ' ', '\t', '\n':
		return true
	}
	return false
}
