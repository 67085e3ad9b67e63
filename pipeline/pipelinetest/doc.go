// Package pipelinetest runs golden-directory tests of pipelines and KRM
// functions.
//
// A test points at a directory whose subdirectories are cases:
//
//	testdata/<case>/
//	    input/        the input package (any files)
//	    config.yaml   optional: the functionConfig (RunFunction only)
//	    expected/     the expected output package, when the render succeeds
//	    errors.txt    the expected error text (a substring), when it fails
//	    results.yaml  optional: the expected results, a YAML list
//
// Run the tests with -update (or CAD_UPDATE_GOLDEN=1) to rewrite
// expected/, errors.txt and results.yaml from what the code does now;
// review the diff before committing it. Importing the package defines no
// flag: a test that has its own -update flag keeps it (pipelinetest reads
// whichever flag is named update), and one that has none calls
// [UpdateFlag] from its TestMain.
package pipelinetest
