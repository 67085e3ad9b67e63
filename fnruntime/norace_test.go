//go:build !race

package fnruntime_test

// raceFactor scales the memory budgets of the bounds tests (see
// race_test.go).
const raceFactor = 1
