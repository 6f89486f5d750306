package printers

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// since is the age of t at now in kubectl's short form ("5m", "3d4h"), or
// "<unknown>" for an unset time.
func since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}

// containerCells joins the names and the images of containers with commas.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for k, c := range containers {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// row makes a table row of cells; ToTable adds the Object.
func row(cells ...any) metav1.TableRow {
	return metav1.TableRow{Cells: cells}
}

// objectMetaRow prints NAME and AGE for kinds without their own printer.
func objectMetaRow(obj runtime.Object, now time.Time) (metav1.TableRow, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return metav1.TableRow{}, err
	}
	return row(m.GetName(), since(m.GetCreationTimestamp().Time, now)), nil
}
