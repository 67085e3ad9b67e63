// Command annotate is a KRM function for the tests of the function
// runner: it sets the annotation its ConfigMap's data names (key, value)
// on every item, reports an info result and logs to standard error. With
// data.fail set it reports that message as an error result and exits 1.
package main

import (
	"fmt"
	"os"

	"sigs.k8s.io/kustomize/kyaml/fn/framework"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func main() {
	if err := framework.Execute(framework.ResourceListProcessorFunc(annotate), &kio.ByteReadWriter{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func annotate(rl *framework.ResourceList) error {
	var data map[string]string
	if rl.FunctionConfig != nil {
		data = rl.FunctionConfig.GetDataMap()
	}
	fmt.Fprintf(os.Stderr, "annotate: %d items\n", len(rl.Items))
	if msg := data["fail"]; msg != "" {
		rl.Results = append(rl.Results, &framework.Result{Message: msg, Severity: framework.Error})
		return rl.Results
	}
	for _, it := range rl.Items {
		if err := it.PipeE(yaml.SetAnnotation(data["key"], data["value"])); err != nil {
			return err
		}
	}
	rl.Results = append(rl.Results, &framework.Result{Message: fmt.Sprintf("annotated %d items", len(rl.Items)), Severity: framework.Info})
	return nil
}
