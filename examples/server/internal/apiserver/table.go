package apiserver

import (
	"mime"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// wantsTable reports whether the client asked for a meta.k8s.io Table, as
// kubectl get does.
func wantsTable(r *http.Request) bool {
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil || mt != "application/json" {
			continue
		}
		if params["as"] == "Table" && params["g"] == "meta.k8s.io" && (params["v"] == "v1" || params["v"] == "v1beta1") {
			return true
		}
		if params["as"] == "" {
			return false // plain JSON is preferred
		}
	}
	return false
}

var nameColumn = metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: "Name of the object"}

var ageColumn = metav1.TableColumnDefinition{Name: "Age", Type: "date", Description: "Time since the object was created"}

// table renders objects as a Table with the resource's columns (Name and
// Age by default); each row's object is the object itself. Column
// definitions are left out when withColumns is false, as Kubernetes does
// after the first event of a watch.
func table(d *resourceDef, objs []metav1.Object, rv, cont string, withColumns bool) *metav1.Table {
	t := &metav1.Table{
		TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
		ListMeta: metav1.ListMeta{ResourceVersion: rv, Continue: cont},
		Rows:     []metav1.TableRow{},
	}
	if withColumns {
		t.ColumnDefinitions = d.columns
		if d.columns == nil {
			t.ColumnDefinitions = []metav1.TableColumnDefinition{nameColumn, ageColumn}
		}
	}
	for _, o := range objs {
		cells := []any{o.GetName(), age(o.GetCreationTimestamp())}
		if d.row != nil {
			cells = d.row(o)
		}
		obj, _ := o.(runtime.Object)
		t.Rows = append(t.Rows, metav1.TableRow{Cells: cells, Object: runtime.RawExtension{Object: obj}})
	}
	return t
}

// age formats the time since t as kubectl does, "<unknown>" for zero.
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}
