//go:build !race

package wasmfn_test

// raceFactor scales the memory budgets of the bounds tests (see
// race_test.go).
const raceFactor = 1
