package pipeline

import "sigs.k8s.io/kustomize/kyaml/yaml"

// IsLocalConfig reports whether n is marked local configuration, as the KRM
// function SDK and kpt read the config.kubernetes.io/local-config
// annotation: any value but "" and "false" marks it. Local configuration
// (a Kptfile, a function's config) belongs to the package and is never
// applied to a cluster; functions that act on deployable resources skip
// it. It is the one reading of the annotation in cad, except for the
// catalog function remove-local-config-resources, which, as kpt's does,
// removes only resources whose value is "true" in any case.
func IsLocalConfig(n *yaml.RNode) bool {
	if n == nil {
		return false
	}
	v, _ := annotation(n, LocalConfigAnnotation)
	return v != "" && v != "false"
}
