package fnruntime_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// licenceHeader matches the opening of another project's licence header
// ("Copyright 2021 Google LLC", "Licensed under the Apache License").
var licenceHeader = regexp.MustCompile(`(?i)copyright \d{4}|licensed under the apache license`)

// TestTestdataIsOurOwn: the golden packages under testdata are cad's own,
// written for cad from the functions' documentation, so none carries
// another project's copyright or licence header (a sign that a catalog
// example package was copied in).
func TestTestdataIsOurOwn(t *testing.T) {
	checked := 0
	err := filepath.WalkDir("testdata", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		checked++
		if loc := licenceHeader.FindIndex(data); loc != nil {
			t.Errorf("%s carries a copyright or licence header (%q): testdata must be cad's own", p, data[loc[0]:loc[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no file under testdata")
	}
}
