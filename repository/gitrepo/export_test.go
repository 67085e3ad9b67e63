package gitrepo

// SetFaultHook sets the hook called at every step of a ref transaction on
// disk (refstore.go), for the crash tests of package gitrepo_test.
func SetFaultHook(f func(step string)) { faultHook = f }
