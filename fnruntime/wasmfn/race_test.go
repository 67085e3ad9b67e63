//go:build race

package wasmfn_test

// raceFactor scales the memory budgets of the bounds tests: the race
// detector's shadow memory multiplies what a process holds.
const raceFactor = 3
