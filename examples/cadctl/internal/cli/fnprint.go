package cli

import (
	"errors"
	"fmt"
	"io"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/configasdata/cad/pipeline"
)

// truncateLines is how many result lines kpt prints per function unless
// --truncate-output=false.
const truncateLines = 4

// printResults prints a function's results as kpt does.
func printResults(w io.Writer, rs pipeline.Results, truncate bool) {
	var lines []string
	for _, r := range rs {
		if r != nil {
			lines = append(lines, strings.TrimSpace(strings.ReplaceAll(r.String(), "\n", " ")))
		}
	}
	if len(lines) == 0 {
		return
	}
	fmt.Fprintf(w, "  [Results]:\n")
	for i, l := range lines {
		if truncate && i >= truncateLines {
			fmt.Fprintf(w, "    ...(%d line(s) truncated, use '--truncate-output=false' to disable)\n", len(lines)-truncateLines)
			break
		}
		fmt.Fprintf(w, "    %s\n", l)
	}
}

// printStderr prints a function's standard error as kpt does.
func printStderr(w io.Writer, stderr string) {
	if stderr == "" {
		return
	}
	fmt.Fprintf(w, "  Stderr:\n")
	for _, l := range strings.Split(stderr, "\n") {
		fmt.Fprintf(w, "    %s\n", l)
	}
}

func fmtDuration(d time.Duration) string { return d.Truncate(time.Millisecond).String() }

// stepView is what kpt prints about one step.
type stepView struct {
	id        string
	call      *fnCall // nil when the function never ran
	exitCode  int
	stderr    string
	results   pipeline.Results
	handled   bool // failed as a process: exit code and stderr tell why
	failed    bool
	onPackage string // the package display name for render; "" for eval
}

func (v stepView) print(w io.Writer, truncate bool) {
	if v.call == nil {
		return
	}
	running := fmt.Sprintf("[RUNNING] %q", v.id)
	if v.call.selective {
		running += fmt.Sprintf(" on %d resource(s)", v.call.in)
	}
	if v.onPackage != "" {
		running += fmt.Sprintf(" on package %q", v.onPackage)
	}
	fmt.Fprintln(w, running)
	if v.failed {
		fmt.Fprintf(w, "[FAIL] %q in %s\n", v.id, fmtDuration(v.call.dur))
		printResults(w, v.results, truncate)
		if v.handled {
			printStderr(w, v.stderr)
			fmt.Fprintf(w, "  Exit code: %d\n\n", v.exitCode)
		}
		return
	}
	fmt.Fprintf(w, "[PASS] %q in %s\n", v.id, fmtDuration(v.call.dur))
	printResults(w, v.results, truncate)
	printStderr(w, v.stderr)
}

// printRender prints the steps of a render grouped by package, as kpt
// fn render does: a "Package" line before each package's pipeline, a
// blank line after each that succeeded. root is the display name of the
// root package.
func printRender(w io.Writer, steps []pipeline.StepResult, calls []*fnCall, root string, truncate bool) {
	matched := matchCalls(steps, calls)
	for i := 0; i < len(steps); {
		pkg := steps[i].Package
		j := i
		for j < len(steps) && steps[j].Package == pkg {
			j++
		}
		display := packageDisplay(root, pkg)
		fmt.Fprintf(w, "Package %q:\n", display)
		ok := true
		for k := i; k < j; k++ {
			s := steps[k]
			if s.Skipped {
				// kpt's line for a step whose when was false.
				id := s.Image
				if id == "" {
					id = s.Exec
				}
				fmt.Fprintf(w, "[SKIPPED] %q (celCondition not met)\n", id)
				continue
			}
			failed := s.ExitCode != 0 || s.ExecutionError != ""
			v := stepView{id: s.ID(), call: matched[k], exitCode: s.ExitCode, stderr: s.Stderr, results: s.Results,
				failed: failed, handled: failed && s.Executed && s.ExecutionError == "", onPackage: display}
			if s.Image != "" || s.Exec != "" {
				v.id = s.Image
				if v.id == "" {
					v.id = s.Exec
				}
			}
			v.print(w, truncate)
			if failed {
				ok = false
			}
		}
		if ok {
			fmt.Fprintln(w)
		}
		i = j
	}
}

// packageDisplay names a package as kpt prints it: the root's directory
// name, and subpackages below it.
func packageDisplay(root, rel string) string {
	rel = strings.TrimPrefix(strings.TrimPrefix(rel, "."), "/")
	if rel == "" {
		return root
	}
	return root + "/" + rel
}

// kptChainPrefix matches one link of kpt's error chain ("pkg.render: pkg
// ./sub:" followed by a newline and tab, or "pipeline.run: ").
var kptChainPrefix = regexp.MustCompile(`^[A-Za-z][\w.]*(: pkg [^\n]*)?(:\n\t|: )$`)

// renderCause returns the message kpt prints for a failed render: the
// cause at the end of kpt's error chain, and whether the failure was a
// function's, already shown with its exit code (kpt prints nothing more
// then).
func renderCause(err error) (string, bool) {
	var fe *pipeline.FunctionError
	if errors.As(err, &fe) {
		return "", true
	}
	var re *pipeline.RenderError
	if errors.As(err, &re) {
		err = re.Err
	}
	for {
		u := errors.Unwrap(err)
		if u == nil {
			break
		}
		s, us := err.Error(), u.Error()
		if !strings.HasSuffix(s, us) || !kptChainPrefix.MatchString(s[:len(s)-len(us)]) {
			break
		}
		err = u
	}
	return kptfileReadText(err.Error()), false
}

// unreadableKptfile is the library's text for a Kptfile its YAML decoder
// refused.
var unreadableKptfile = regexp.MustCompile(`(?s)^error reading Kptfile at "([^"]*)": (yaml: .*)$`)

// kptfileReadText rewrites a Kptfile decoding error as kpt's CLI prints
// it, with the Go type names of kpt's API package (v1.Function,
// yaml.ObjectMeta) where the library's decoder names cad's (revision.X);
// other messages are returned as they are.
func kptfileReadText(msg string) string {
	m := unreadableKptfile.FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	details := strings.ReplaceAll(m[2], " in type revision.ObjectMeta", " in type yaml.ObjectMeta")
	details = strings.ReplaceAll(details, " in type revision.", " in type v1.")
	return fmt.Sprintf("Kptfile at %q can't be read.\n\nDetails:\n%s", path.Join(m[1], "Kptfile"), details)
}
