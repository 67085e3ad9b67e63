package fnruntime

// LoadKubeSchemaForBenchmark parses the embedded Kubernetes 1.37 schema
// afresh (tests only).
func LoadKubeSchemaForBenchmark() {
	ks := &kubeSchema{minor: "1.37", version: "v1.37.2", gz: kubeSchemaV137}
	if err := ks.load(); err != nil {
		panic(err)
	}
}
