package printers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// CustomTable converts objects of a custom resource to a Table with the
// given columns; cells renders one object's row. It embeds objects as
// ToTable does.
func CustomTable(columns []metav1.TableColumnDefinition, cells func(obj runtime.Object, now time.Time) []any,
	objs []runtime.Object, includeObject string, now time.Time) (*metav1.Table, error) {
	p := printer{columns: columns, row: func(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
		return row(cells(obj, now)...), nil
	}}
	return p.toTable("custom resource", objs, includeObject, now)
}

// Age renders the time since t as kubectl's AGE column does.
func Age(t, now time.Time) string { return since(t, now) }

// crdColumns are upstream's columns for CustomResourceDefinitions.
var crdColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

func crdRow(obj runtime.Object, _ time.Time) (metav1.TableRow, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, err
	}
	return row(m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)), nil
}
