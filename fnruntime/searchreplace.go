package fnruntime

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/configasdata/cad/pipeline"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

var searchReplaceMatchers = []string{"by-value", "by-file-path", "by-value-regex", "by-path", "put-value", "put-comment"}

type searchReplace struct {
	budget                                                          *budget
	byValue, byValueRegex, byPath, byFilePath, putValue, putComment string
	regex                                                           *regexp.Regexp
	filePath                                                        string
	count                                                           int
	results                                                         []srResult
}

type srResult struct{ file, field, value string }

// searchReplaceFn ports the catalog's search-replace: match fields by path
// (with * and ** patterns), value or value regex, optionally by file path,
// and put a value or a line comment.
//
// Its output is bounded (see [Limits]): a put-value or put-comment's
// expansion of capture groups is sized before each group is substituted
// and charged to the run's budget, and a by-path of more than
// Limits.MaxPathDepth segments is refused as a config error.
func searchReplaceFn(ctx context.Context, rl *pipeline.ResourceList) error {
	fail := func(err error) error {
		rl.Results = append(rl.Results, errorResult(fmt.Sprintf("failed to perform search-replace operation: %q", err.Error())))
		return &pipeline.FunctionError{ExitCode: 1, Stderr: err.Error(), Err: err}
	}
	configFail := func(err error) error {
		return &configError{msg: fmt.Sprintf("failed to perform search-replace operation: %q", err.Error()), stderr: err.Error(), cause: err}
	}
	dm := configData(rl.FunctionConfig)
	for k := range dm {
		ok := false
		for _, m := range searchReplaceMatchers {
			ok = ok || k == m
		}
		if !ok {
			return configFail(fmt.Errorf("invalid matcher %q, must be one of %q", k, searchReplaceMatchers))
		}
	}
	sr := &searchReplace{budget: budgetFrom(ctx), byValue: dm["by-value"], byValueRegex: dm["by-value-regex"], byPath: dm["by-path"],
		byFilePath: dm["by-file-path"], putValue: dm["put-value"], putComment: dm["put-comment"]}
	if sr.byValue != "" && sr.byValueRegex != "" {
		return configFail(fmt.Errorf("only one of [%q, %q] can be provided", "by-value", "by-value-regex"))
	}
	if sr.byPath != "" {
		if err := pathDepth(limitsFrom(ctx), "search-replace by-path", strings.Count(sr.byPath, ".")+1); err != nil {
			return configFail(err)
		}
	}
	if sr.byValueRegex != "" {
		re, err := regexp.Compile(sr.byValueRegex)
		if err != nil {
			return configFail(err)
		}
		sr.regex = re
	}
	for _, o := range rl.Items {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := sr.perform(o); err != nil {
			return fail(err)
		}
	}
	if len(sr.results) == 0 {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "no matches"})
		return nil
	}
	for _, r := range sr.results {
		msg := fmt.Sprintf("Matched field value %q", r.value)
		if sr.putComment != "" || sr.putValue != "" {
			msg = fmt.Sprintf("Mutated field value to %q", r.value)
		}
		rl.Results = append(rl.Results, &pipeline.Result{Message: msg, Field: &pipeline.Field{Path: r.field}, File: &pipeline.File{Path: r.file}})
	}
	return nil
}

func (sr *searchReplace) perform(o *yaml.RNode) error {
	fp := o.GetAnnotations()[pipeline.PathAnnotation]
	if fp == "" {
		fp = o.GetAnnotations()[pipeline.LegacyPathAnnotation]
	}
	if sr.byFilePath != "" && !globMatch(sr.byFilePath, fp) {
		return nil
	}
	sr.filePath = fp
	if isAbsFieldPath(sr.byPath) && !strings.Contains(sr.byPath, "[") && sr.byValue == "" && sr.byValueRegex == "" && sr.putValue != "" {
		p := strings.Split(sr.byPath, ".")
		parent, err := o.Pipe(yaml.LookupCreate(yaml.MappingNode, p[:len(p)-1]...))
		if err != nil {
			return err
		}
		if err := sr.budget.charge(2 * scalarSize(sr.putValue, len(p))); err != nil {
			return err
		}
		sn := yaml.NewScalarRNode(sr.putValue)
		sn.YNode().Tag = yaml.NodeTagEmpty
		if err := parent.PipeE(yaml.SetField(p[len(p)-1], sn)); err != nil {
			return err
		}
		sr.results = append(sr.results, srResult{file: fp, field: sr.byPath, value: sr.putValue})
		sr.count++
		return nil
	}
	return sr.walk(o.YNode(), "")
}

func (sr *searchReplace) walk(n *yaml.Node, p string) error {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if err := sr.walk(c, p); err != nil {
				return err
			}
		}
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if sr.putComment != "" && v.Kind == yaml.SequenceNode && len(v.Content) > 0 {
				if sr.pathMatch(strings.TrimPrefix(p+"."+strings.TrimSpace(k.Value), ".")) {
					k.LineComment = sr.putComment
					v.Style = yaml.FlowStyle
					s, err := yaml.String(v)
					if err != nil {
						return err
					}
					v.Style = yaml.FoldedStyle
					sr.results = append(sr.results, srResult{file: sr.filePath, field: sr.byPath + " # " + sr.putComment, value: strings.TrimSpace(s)})
					sr.count++
				}
			}
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			if err := sr.walk(n.Content[i+1], p+"."+n.Content[i].Value); err != nil {
				return err
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if err := sr.walk(c, fmt.Sprintf("%s[%d]", p, i)); err != nil {
				return err
			}
		}
	case yaml.ScalarNode:
		return sr.scalar(n, p)
	}
	return nil
}

func (sr *searchReplace) scalar(n *yaml.Node, p string) error {
	pathMatch := sr.pathMatch(p)
	valueMatch := (sr.byValue != "" && sr.byValue == n.Value) || (sr.regex != nil && sr.regex.MatchString(n.Value))
	if !((valueMatch && pathMatch) || (valueMatch && sr.byPath == "") || (pathMatch && sr.byValue == "" && sr.byValueRegex == "")) {
		return nil
	}
	sr.count++
	var err error
	if sr.putComment != "" {
		if n.LineComment, err = sr.resolvePattern(n.Value, sr.putComment); err != nil {
			return err
		}
	}
	if sr.putValue != "" {
		if n.Value, err = sr.resolvePattern(n.Value, sr.putValue); err != nil {
			return err
		}
		n.Tag = yaml.NodeTagEmpty
	}
	if sr.filePath != "" {
		// The result quotes the field as written.
		if err := sr.budget.charge(scalarSize(n.Value, 0) + int64(len(n.LineComment)+len(p))); err != nil {
			return err
		}
		s, err := yaml.String(n)
		if err != nil {
			return err
		}
		sr.results = append(sr.results, srResult{file: sr.filePath, field: strings.TrimPrefix(p, "."), value: strings.TrimSpace(s)})
	}
	return nil
}

var captureGroupRef = regexp.MustCompile(`\$\{([0-9]+)\}`)

// resolvePattern substitutes the capture groups of the value regex's
// match in value into pattern, group 1 first: each ${i} becomes group i,
// and a group whose text names a later group is substituted again. The
// size of each substitution is computed before it is made and charged to
// the run's budget, so that a pattern repeating a large group, or groups
// naming each other (which doubles the text at each group), is refused
// before the allocation.
func (sr *searchReplace) resolvePattern(value, pattern string) (string, error) {
	if sr.regex == nil {
		if err := sr.budget.charge(int64(len(pattern))); err != nil {
			return "", err
		}
		return pattern, nil
	}
	res := pattern
	size := int64(len(res))
	for i, v := range sr.regex.FindStringSubmatch(value) {
		if i == 0 {
			continue
		}
		ref := "${" + strconv.Itoa(i) + "}"
		n := int64(strings.Count(res, ref))
		if n == 0 {
			continue
		}
		next := size + n*(int64(len(v))-int64(len(ref)))
		if err := sr.budget.check(sr.budget.used + next); err != nil {
			return "", err
		}
		res, size = strings.ReplaceAll(res, ref, v), next
	}
	if captureGroupRef.MatchString(res) {
		return "", fmt.Errorf("unable to resolve capture groups")
	}
	if err := sr.budget.charge(size); err != nil {
		return "", err
	}
	return res, nil
}

func (sr *searchReplace) pathMatch(yamlPath string) bool {
	if sr.byPath == "" {
		return false
	}
	pat := strings.Split(sr.byPath, ".")
	elems := strings.Split(strings.TrimPrefix(yamlPath, "."), ".")
	dp := make([][]bool, len(elems)+1)
	for i := range dp {
		dp[i] = make([]bool, len(pat)+1)
	}
	dp[0][0] = true
	for j := 1; j <= len(pat); j++ {
		if pat[j-1] == "**" {
			dp[0][j] = dp[0][j-1]
		}
	}
	for i := 1; i <= len(elems); i++ {
		for j := 1; j <= len(pat); j++ {
			switch {
			case pat[j-1] == "**":
				dp[i][j] = dp[i][j-1] || dp[i-1][j]
			case pat[j-1] == "*" || pathElemMatch(elems[i-1], pat[j-1]):
				dp[i][j] = dp[i-1][j-1]
			}
		}
	}
	return dp[len(elems)][len(pat)]
}

func pathElemMatch(elem, pattern string) bool {
	if elem == pattern {
		return true
	}
	if strings.Contains(elem, "[") {
		e := strings.Split(elem, "[")
		p := strings.Split(pattern, "[")
		if p[0] != "*" && e[0] != p[0] {
			return false
		}
		return len(p) > 1 && (p[1] == "*]" || e[1] == p[1])
	}
	return false
}

func isAbsFieldPath(p string) bool {
	if p == "" {
		return false
	}
	for _, e := range strings.Split(p, ".") {
		if e == "" || strings.Contains(e, "*") {
			return false
		}
	}
	return true
}

// globMatch matches a slash path against a doublestar pattern (** spans
// directories, * and ? do not).
func globMatch(pattern, name string) bool {
	var b strings.Builder
	b.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; c {
		case '*':
			if i+1 < len(pattern) && pattern[i+1] == '*' {
				i++
				if i+1 < len(pattern) && pattern[i+1] == '/' {
					i++
					b.WriteString("(?:.*/)?")
				} else {
					b.WriteString(".*")
				}
			} else {
				b.WriteString("[^/]*")
			}
		case '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	b.WriteString("$")
	re, err := regexp.Compile(b.String())
	return err == nil && re.MatchString(name)
}
