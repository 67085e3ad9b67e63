package apiserver

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
)

func TestMain(m *testing.M) {
	// k8s.io/apiserver logs every request and group it installs through
	// klog; the tests check responses, not logs.
	klog.SetLogger(logr.Discard())
	os.Exit(m.Run())
}
