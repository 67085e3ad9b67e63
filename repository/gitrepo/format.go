package gitrepo

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"

	"github.com/configasdata/cad/repository"
)

// FormatError reports a repository format cad does not implement: a
// core.repositoryformatversion other than 0 or 1, or an extensions.*
// setting other than those cad reads and writes as git does (see
// repository/gitrepo/DESIGN.md, "Repository formats"). It matches
// repository.ErrNotSupported. Open returns it before it reads or writes
// anything in the repository, so that cad never writes into a repository
// git would then find damaged (a SHA-256 repository given SHA-1 objects)
// or that git refuses to open at all.
type FormatError struct {
	// Setting is the configuration variable, lower case as git reads it:
	// "core.repositoryformatversion" or "extensions.<name>"; for a
	// remote, the capability "object-format".
	Setting string
	// Value is its value as written ("" for a bare boolean key).
	Value string
	// Where is the file or remote it was read from.
	Where string
}

// Error names the setting, its value and where it was found.
func (e *FormatError) Error() string {
	return fmt.Sprintf("%s: %s = %s: a repository format cad does not implement (cad reads and writes format versions 0 and 1 with no extension but noop, noop-v1 and objectformat = sha1)", e.Where, e.Setting, e.Value)
}

// Is reports whether target is repository.ErrNotSupported.
func (e *FormatError) Is(target error) bool { return target == repository.ErrNotSupported }

// checkFormat reads the repository format of the git directory gitDir from
// its config file, as git does (only that file, no include), and returns
// a *FormatError for the first setting cad does not implement. A missing
// config is format version 0 with no extension, as git reads it.
//
// What is accepted follows go-git v5 (repository_extensions.go: noop and
// noop-v1 are the extensions it knows) and git's rules for format 0 and 1:
// noop in either version; noop-v1 and objectformat = sha1 (SHA-1, cad's
// only hash) in version 1 only, as git refuses them in version 0. Every
// other extension is refused, in version 0 too, where git would ignore an
// unknown name, as go-git refuses it: among them preciousobjects,
// partialclone (objects may be missing, to be fetched from a promisor
// remote cad does not know), worktreeconfig, refstorage (reftable) and
// objectformat = sha256.
func checkFormat(gitDir string) error {
	where := filepath.Join(gitDir, "config")
	data, err := os.ReadFile(where)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the repository format: %w", err)
	}
	version, exts := repositoryFormat(data)
	switch version {
	case "", "0", "1":
	default:
		return &FormatError{Setting: "core.repositoryformatversion", Value: version, Where: where}
	}
	for _, x := range exts {
		if !formatAccepts(version == "1", x.name, x.value) {
			return &FormatError{Setting: "extensions." + x.name, Value: x.value, Where: where}
		}
	}
	return nil
}

// formatAccepts reports whether cad implements extension name (lower
// case) set to value, in a repository of format version 1 when v1.
func formatAccepts(v1 bool, name, value string) bool {
	switch name {
	case "noop":
		return true
	case "noop-v1":
		return v1
	case "objectformat":
		return v1 && value == "sha1"
	}
	return false
}

// formatExt is one extensions.* setting.
type formatExt struct{ name, value string }

// repositoryFormat returns core.repositoryformatversion (trimmed, "" when
// unset) and the extensions.* settings of the git config file data, in
// order, the last value of each name. Section and key names are case
// insensitive, as git reads them; values keep their case. It reads the
// git config syntax as far as these two sections need: section headers
// ([core], [Extensions], and the old [section.sub] form, whose subsection
// makes it another section), keys with or without "= value", quoted
// values, comments after # or ;, and lines continued with a backslash.
func repositoryFormat(data []byte) (version string, exts []formatExt) {
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	var pending string // a line continued by a trailing backslash
	for sc.Scan() {
		line := pending + sc.Text()
		pending = ""
		if strings.HasSuffix(line, "\\") && !strings.HasSuffix(line, "\\\\") {
			pending = strings.TrimSuffix(line, "\\")
			continue
		}
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			end := strings.IndexByte(line, ']')
			if end < 0 {
				section = ""
				continue
			}
			head := strings.TrimSpace(line[1:end])
			if strings.ContainsAny(head, " \t\"") {
				section = "" // [section "subsection"]: not ours
			} else {
				section = strings.ToLower(head)
			}
			// A key may follow the header on the same line.
			if line = strings.TrimSpace(line[end+1:]); line == "" || line[0] == '#' || line[0] == ';' {
				continue
			}
		}
		if section != "core" && section != "extensions" {
			continue
		}
		key, value, _ := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		value = configValue(value)
		switch {
		case section == "core" && key == "repositoryformatversion":
			version = value
			if n, err := strconv.Atoi(value); err == nil {
				version = strconv.Itoa(n) // git reads "01" as 1
			}
		case section == "extensions" && key != "":
			for i := range exts {
				if exts[i].name == key {
					exts = append(exts[:i], exts[i+1:]...)
					break
				}
			}
			exts = append(exts, formatExt{name: key, value: value})
		}
	}
	return version, exts
}

// configValue returns a config value as git reads it: outside quotes,
// a # or ; starts a comment and surrounding space goes; quotes are
// removed, and \" \\ \n \t inside them are unescaped.
func configValue(s string) string {
	var b strings.Builder
	quoted := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			quoted = !quoted
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			default:
				b.WriteByte(s[i])
			}
		case !quoted && (c == '#' || c == ';'):
			return strings.TrimSpace(b.String())
		default:
			b.WriteByte(c)
		}
	}
	return strings.TrimSpace(b.String())
}

// checkRemoteFormat returns a *FormatError when a remote, at where,
// advertised a hash other than SHA-1: the object-format capability (a
// remote that sends none uses SHA-1). ar is the advertisement go-git
// decoded, or nil, and err the error of decoding it: go-git v5 reads
// SHA-1 ids only, so a SHA-256 remote's first line fails to decode, and
// its capabilities are read from the line the error carries. So a
// SHA-256 remote is refused before anything is fetched or pushed.
func checkRemoteFormat(where string, ar *packp.AdvRefs, err error) error {
	var caps *capability.List
	var bad *packp.ErrUnexpectedData
	switch {
	case ar != nil:
		caps = ar.Capabilities
	case errors.As(err, &bad):
		// The first line: <id> SP <ref> NUL <capabilities>.
		_, after, ok := bytes.Cut(bad.Data, []byte{0})
		if !ok {
			return nil
		}
		caps = capability.NewList()
		if caps.Decode(bytes.TrimRight(after, "\n")) != nil {
			return nil
		}
	}
	if caps == nil {
		return nil
	}
	for _, v := range caps.Get(capability.ObjectFormat) {
		if v != "sha1" {
			return &FormatError{Setting: string(capability.ObjectFormat), Value: v, Where: where}
		}
	}
	return nil
}
