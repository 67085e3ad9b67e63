// Package kptattr holds the annotation in which kpt's render (and so
// Porch's) attributes Config Connector resources to the kpt command group
// that touched them. It is Config Connector's convention, not part of the
// pipeline contract, so it is internal: package pipeline writes it (see
// pipeline.Options.NoAttribution) and the generate-folders builtin keeps it.
package kptattr

// BlueprintAnnotation is the annotation in which kpt's render (and so
// Porch's) records that Config Connector resources (apiVersion with
// ".cnrm.") went through a KRM function render: "krm-fn", merged with
// what the annotation said before.
const BlueprintAnnotation = "cnrm.cloud.google.com/blueprint"
