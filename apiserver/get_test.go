package apiserver

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A GET's resourceVersion parameter means what it means to
// kube-apiserver: unset the newest (etcd), 0 any (the watch cache), N not
// older than N (504 when the cache does not reach it), garbage 400.
func TestGetByResourceVersion(t *testing.T) {
	ts := startTestServer(t)
	cm, err := ts.client(t).ConfigMaps().Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	path := "/api/v1/namespaces/default/configmaps/c"
	for _, q := range []string{"", "?resourceVersion=0", "?resourceVersion=" + cm.ResourceVersion} {
		code, body := ts.do(t, "GET", path+q, "")
		var got corev1.ConfigMap
		if err := json.Unmarshal(body, &got); code != 200 || err != nil || got.ResourceVersion != cm.ResourceVersion {
			t.Errorf("GET %s: %d %s", q, code, body)
		}
	}
	if code, body := ts.do(t, "GET", fmt.Sprintf("%s?resourceVersion=%d", path, rv+100000), ""); code != 504 || !strings.Contains(string(body), "Too large resource version") {
		t.Errorf("a future resourceVersion: %d %s", code, body)
	}
	if code, body := ts.do(t, "GET", path+"?resourceVersion=abc", ""); code != 400 || !strings.Contains(string(body), `invalid resource version \"abc\"`) {
		t.Errorf("resourceVersion=abc: %d %s", code, body)
	}
	if code, _ := ts.do(t, "GET", "/api/v1/namespaces/default/configmaps/none?resourceVersion=0", ""); code != 404 {
		t.Errorf("a missing object from the cache: %d, want 404", code)
	}
}
