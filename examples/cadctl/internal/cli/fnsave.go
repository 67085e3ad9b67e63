package cli

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/revision"
)

// stringsFlag is a repeatable string flag.
type stringsFlag []string

func (s *stringsFlag) String() string { return strings.Join(*s, ",") }

func (s *stringsFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// resolveImagePrefix is kpt's short-name resolution for --save: a name
// without "/" gets the catalog prefix; the tag is kept as given (none
// means none).
func resolveImagePrefix(img string) string {
	if img == "" || strings.Contains(img, "/") {
		return img
	}
	return pipeline.DefaultImagePrefix + "/" + img
}

// savedFunction is what fn eval --save writes into the Kptfile.
type savedFunction struct {
	image, tag, exec, configPath string
	args                         []string
	selector, exclusion          revision.Selector
}

func (s savedFunction) function() revision.Function {
	fn := revision.Function{Image: s.image, Exec: s.exec}
	if s.image != "" {
		fn.Tag = s.tag
	}
	if !isEmptySelector(s.selector) {
		fn.Selectors = []revision.Selector{s.selector}
	}
	if !isEmptySelector(s.exclusion) {
		fn.Exclude = []revision.Selector{s.exclusion}
	}
	if s.configPath != "" {
		fn.ConfigPath = filepath.ToSlash(s.configPath)
		return fn
	}
	data := map[string]string{}
	for i, a := range s.args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			if i == 0 {
				continue // kpt allows the config's kind as the first argument
			}
			v = ""
		}
		data[k] = v
	}
	if len(data) > 0 {
		fn.ConfigMap = data
	}
	return fn
}

func isEmptySelector(s revision.Selector) bool {
	return s.APIVersion == "" && s.Kind == "" && s.Name == "" && s.Namespace == "" && len(s.Labels) == 0 && len(s.Annotations) == 0
}

// saveFunction adds the evaluated function to the mutators or validators
// of dir's Kptfile as kpt fn eval --save does: it replaces the step with
// the same image (or exec), else appends one; the rest of the Kptfile
// keeps its formatting and comments. Like kpt it reports on standard
// error and does not fail the command.
func (c *cmdEnv) saveFunction(dir, fnType string, s savedFunction) {
	p := filepath.Join(dir, revision.KptfileName)
	data, err := os.ReadFile(p)
	if err != nil {
		c.stderrf("function not added: Kptfile not exists\n")
		return
	}
	kf, err := revision.ParseKptfile(data)
	if err != nil {
		c.stderrf("function is not added to Kptfile: %v\n", err)
		return
	}
	if kf.Pipeline == nil {
		kf.Pipeline = &revision.Pipeline{}
	}
	list := &kf.Pipeline.Mutators
	if fnType == "validator" {
		list = &kf.Pipeline.Validators
	}
	fn := s.function()
	id := s.image
	if id == "" {
		id = s.exec
	}
	verb := "Added"
	replaced := false
	for i, old := range *list {
		if (s.image != "" && old.Image == s.image) || (s.exec != "" && old.Exec == s.exec) {
			(*list)[i] = fn
			replaced = true
		}
	}
	if replaced {
		verb = "Updated"
	} else {
		*list = append(*list, fn)
	}
	out, err := kf.Encode()
	if err == nil {
		err = os.WriteFile(p, out, 0o644)
	}
	if err != nil {
		c.stderrf("function is not added to Kptfile: %v\n", err)
		return
	}
	c.stderrf("%s %q as %s in the Kptfile.\n", verb, id, fnType)
}
