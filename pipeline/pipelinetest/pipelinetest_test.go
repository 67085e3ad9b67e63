package pipelinetest_test

import (
	"context"
	"testing"

	"github.com/configasdata/cad/pipeline"
	"github.com/configasdata/cad/pipeline/pipelinetest"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// addOwner sets data.owner from the functionConfig's data.owner on every
// ConfigMap; it fails without one.
var addOwner = pipeline.FunctionFunc(func(_ context.Context, rl *pipeline.ResourceList) error {
	owner, err := rl.FunctionConfig.Pipe(yaml.Lookup("data", "owner"))
	if err != nil || owner == nil {
		rl.Results = append(rl.Results, &pipeline.Result{Message: "no owner given", Severity: pipeline.SeverityError})
		return &pipeline.FunctionError{ExitCode: 1, Stderr: "no owner"}
	}
	for _, it := range rl.Items {
		if it.GetKind() == "ConfigMap" {
			if err := it.PipeE(yaml.LookupCreate(yaml.MappingNode, "data"), yaml.SetField("owner", owner)); err != nil {
				return err
			}
		}
	}
	rl.Results = append(rl.Results, &pipeline.Result{Message: "owner set", Severity: pipeline.SeverityInfo})
	return nil
})

func TestRunFunction(t *testing.T) {
	pipelinetest.RunFunction(t, "testdata/add-owner", addOwner)
}
