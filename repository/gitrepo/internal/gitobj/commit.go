package gitobj

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// CommitInfo is what cad reads of a commit. DecodeCommit fills all but
// Annotations, which the reader sets to Annotations(Message).
type CommitInfo struct {
	Hash        plumbing.Hash
	Tree        plumbing.Hash
	Parents     []plumbing.Hash
	Author      object.Signature
	Message     string
	Annotations []Annotation
}

// DecodeCommit reads what cad keeps of commit h from its raw content, as
// go-git's decoder reads it: the tree (the first header), the parents
// that follow it, the author right after them (else none), and the
// message after the first blank line; other headers are skipped. ok is
// false when the commit does not start with a valid tree header or a
// parent's id is malformed, for go-git to decode (and report). It saves
// the decoder's copies and its hash of the whole object, which a list
// or a workspace lookup pays for every tag.
func DecodeCommit(h plumbing.Hash, data []byte) (*CommitInfo, bool) {
	ci := &CommitInfo{Hash: h}
	line := func() ([]byte, bool) {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			l := data
			data = nil
			return l, len(l) > 0
		}
		l := data[:i]
		data = data[i+1:]
		return l, true
	}
	l, _ := line()
	rest, ok := bytes.CutPrefix(l, []byte("tree "))
	if !ok || !plumbing.IsHash(string(rest)) {
		return nil, false
	}
	ci.Tree = plumbing.NewHash(string(rest))
	for {
		if len(data) == 0 {
			return ci, true
		}
		if data[0] == '\n' {
			ci.Message = string(data[1:])
			return ci, true
		}
		save := data
		l, _ = line()
		rest, ok := bytes.CutPrefix(l, []byte("parent "))
		if !ok {
			if bytes.Equal(l, []byte("parent")) {
				return nil, false
			}
			data = save
			break
		}
		if !plumbing.IsHash(string(rest)) {
			return nil, false
		}
		ci.Parents = append(ci.Parents, plumbing.NewHash(string(rest)))
	}
	if bytes.HasPrefix(data, []byte("author\n")) || bytes.Equal(data, []byte("author")) {
		return nil, false
	}
	if rest, ok := bytes.CutPrefix(data, []byte("author ")); ok {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			i = len(rest)
		}
		ci.Author.Decode(rest[:i])
	}
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		ci.Message = string(data[i+2:])
	}
	return ci, true
}

// Annotation is the kpt: line Porch appends to its commit messages: the
// JSON of these fields in this order.
type Annotation struct {
	PackagePath   string          `json:"package,omitempty"`
	WorkspaceName string          `json:"workspaceName,omitempty"`
	Revision      string          `json:"revision,omitempty"`
	Task          json.RawMessage `json:"task,omitempty"`
}

// Annotations returns the kpt: annotations of a commit message, skipping
// lines that do not parse.
func Annotations(message string) []Annotation {
	var out []Annotation
	for _, line := range strings.Split(message, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "kpt:")
		if !ok {
			continue
		}
		var a Annotation
		if json.Unmarshal([]byte(rest), &a) == nil {
			out = append(out, a)
		}
	}
	return out
}
