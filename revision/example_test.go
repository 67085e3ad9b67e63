package revision_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/configasdata/cad/revision"
)

// Files is an immutable fs.FS of package files: changes return a new value.
func ExampleFiles() {
	files, err := revision.FilesFromStrings(map[string]string{
		"Kptfile":                "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n",
		"deploy/deployment.yaml": "kind: Deployment\n",
	})
	if err != nil {
		panic(err)
	}

	changed, err := files.With("deploy/service.yaml", []byte("kind: Service\n"))
	if err != nil {
		panic(err)
	}
	fmt.Println("before:", files.Paths())
	fmt.Println("after: ", changed.Paths())

	// Files is an io/fs file system.
	fs.WalkDir(changed, ".", func(p string, d fs.DirEntry, err error) error {
		if !d.IsDir() {
			fmt.Println("walk:", p)
		}
		return err
	})

	// Unsafe paths are refused.
	_, err = files.With("../escape.yaml", nil)
	fmt.Println(errors.Is(err, revision.ErrInvalid), err)

	// Output:
	// before: [Kptfile deploy/deployment.yaml]
	// after:  [Kptfile deploy/deployment.yaml deploy/service.yaml]
	// walk: Kptfile
	// walk: deploy/deployment.yaml
	// walk: deploy/service.yaml
	// true invalid package file path "../escape.yaml": contains a .. segment
}

// A Kptfile read with ParseKptfile keeps its comments and layout when it is
// changed and written back.
func ExampleParseKptfile() {
	kf, err := revision.ParseKptfile([]byte(`apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app # the package name
upstreamLock:
  type: git
  git:
    repo: https://github.com/example/catalog
    ref: v1
    commit: 1a2b3c4 # resolved by clone
`))
	if err != nil {
		panic(err)
	}
	kf.UpstreamLock.Git.Commit = "9f8e7d6"
	kf.SetCondition(revision.Condition{Type: "Ready", Status: revision.ConditionTrue})

	out, err := kf.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))

	// Output:
	// apiVersion: kpt.dev/v1
	// kind: Kptfile
	// metadata:
	//   name: app # the package name
	// upstreamLock:
	//   type: git
	//   git:
	//     repo: https://github.com/example/catalog
	//     ref: v1
	//     commit: 9f8e7d6 # resolved by clone
	// status:
	//   conditions:
	//     - type: Ready
	//       status: "True"
}

// ParseKptfile refuses what kpt refuses, with kpt's messages.
func ExampleParseKptfile_errors() {
	_, err := revision.ParseKptfile([]byte("apiVersion: kpt.dev/v1alpha2\nkind: Kptfile\n"))
	fmt.Println(err)

	_, err = revision.ParseKptfile([]byte("apiVersion: kpt.dev/v1\nkind: Kptfile\nspec: {}\n"))
	fmt.Println(errors.Is(err, revision.ErrInvalid))

	// Output:
	// Kptfile has an old version ("v1alpha2") of the Kptfile schema
	// true
}

// A Kptfile built in code is written in kpt's canonical form.
func ExampleNewKptfile() {
	kf := revision.NewKptfile("app")
	kf.Pipeline = &revision.Pipeline{
		Mutators: []revision.Function{{
			Image:     "set-namespace:v0.4",
			ConfigMap: map[string]string{"namespace": "prod"},
		}},
	}
	if err := kf.Validate(); err != nil {
		panic(err)
	}
	out, err := kf.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(out))

	// Output:
	// apiVersion: kpt.dev/v1
	// kind: Kptfile
	// metadata:
	//   name: app
	// pipeline:
	//   mutators:
	//     - image: set-namespace:v0.4
	//       configMap:
	//         namespace: prod
}

// Validate reports pipeline mistakes as kpt does.
func ExampleKptfile_Validate() {
	kf := revision.NewKptfile("app")
	kf.Pipeline = &revision.Pipeline{
		Mutators: []revision.Function{{Image: "set-labels:v0.1", ConfigPath: "../labels.yaml"}},
	}
	fmt.Println(kf.Validate())

	// Output:
	// Kptfile is invalid:
	// Field: `pipeline.mutators[0].configPath`
	// Value: "../labels.yaml"
	// Reason: path must not be outside the package
}

// A package without a Kptfile records its upstream in cad's package file;
// InfoFromFiles reads it back.
func ExamplePackageFile() {
	pf := revision.NewPackageFile("web")
	pf.UpstreamLock = &revision.UpstreamLock{Type: revision.GitOrigin,
		Git: &revision.GitLock{Repo: "https://example.com/blueprints.git", Directory: "web", Ref: "web/v2", Commit: "3f2a"}}
	data, err := pf.Encode()
	if err != nil {
		panic(err)
	}
	fmt.Print(string(data))
	files := revision.MustFiles(map[string]string{revision.PackageFileName: string(data), "deploy.yaml": "kind: Deployment\n"})
	info, _ := revision.InfoFromFiles(files)
	fmt.Println(info.UpstreamLock.Git.Ref)
	// Output:
	// apiVersion: cad.configasdata.dev/v1alpha1
	// kind: Package
	// metadata:
	//   name: web
	//   annotations:
	//     config.kubernetes.io/local-config: "true"
	// spec:
	//   upstreamLock:
	//     type: git
	//     git:
	//       repo: https://example.com/blueprints.git
	//       directory: web
	//       ref: web/v2
	//       commit: 3f2a
	// web/v2
}

// CheckYAML refuses a "billion laughs" file before anything expands it,
// and accepts ordinary anchors and merge keys.
func ExampleCheckYAML() {
	bomb := `a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
`
	err := revision.CheckYAML(context.Background(), "bomb.yaml", []byte(bomb), nil)
	fmt.Println(err)
	fmt.Println(errors.Is(err, revision.ErrInvalid))

	ordinary := "base: &base {color: blue}\nlarge:\n  <<: *base\n  size: large\n"
	fmt.Println(revision.CheckYAML(context.Background(), "ok.yaml", []byte(ordinary), nil))
	// Output:
	// YAML file "bomb.yaml" (document 1) has aliases that expand to more than 100000 nodes (YAMLLimits.MaxAliasNodes)
	// true
	// <nil>
}
