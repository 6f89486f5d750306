package apiserver

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"minik/internal/pki"
)

// restConfig is a client-go config of the admin.
func (ts *testServer) restConfig(t *testing.T) *rest.Config {
	t.Helper()
	certFile, keyFile, err := ts.ca.EnsureClient(ts.pkiDir, "admin", pki.AdminUser, []string{pki.MastersGroup})
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := os.ReadFile(certFile)
	key, _ := os.ReadFile(keyFile)
	return &rest.Config{Host: ts.config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: ts.ca.CertPEM(), CertData: cert, KeyData: key}}
}

// client-go's metadata client and its informer (controller-runtime's
// OnlyMetadata, kube-controller-manager's garbage collector) read only
// objects' metadata: every answer is a PartialObjectMetadata, bookmarks
// included, or the client cannot decode the watch.
func TestPartialObjectMetadata(t *testing.T) {
	ts := startTestServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	mc := metadata.NewForConfigOrDie(ts.restConfig(t))
	cms := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace("default")
	for _, body := range []string{
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"app":"x"}},"data":{"big":"value"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}`,
	} {
		if code, out := ts.do(t, "POST", "/api/v1/namespaces/default/configmaps", body); code != http.StatusCreated {
			t.Fatalf("create: %d %s", code, out)
		}
	}

	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 2 || list.Items[0].Name != "a" || list.Items[0].Labels["app"] != "x" || list.ResourceVersion == "" {
		t.Fatalf("list: %v %+v", err, list)
	}
	got, err := cms.Get(ctx, "a", metav1.GetOptions{})
	if err != nil || got.Name != "a" || got.UID == "" {
		t.Fatalf("get: %v %+v", err, got)
	}

	t.Run("the informer syncs and sees changes", func(t *testing.T) {
		inf := metadatainformer.NewFilteredMetadataInformer(mc, corev1.SchemeGroupVersion.WithResource("configmaps"), "default", 0, cache.Indexers{}, nil)
		seen := make(chan string, 10)
		inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, obj any) {
			seen <- obj.(*metav1.PartialObjectMetadata).Labels["app"]
		}})
		ictx, stop := context.WithCancel(ctx)
		defer stop()
		go inf.Informer().RunWithContext(ictx)
		if !cache.WaitForCacheSync(ictx.Done(), inf.Informer().HasSynced) {
			t.Fatal("metadata informer never synced")
		}
		if n := len(inf.Informer().GetStore().List()); n != 2 {
			t.Fatalf("informer holds %d objects, want 2", n)
		}
		if _, err := cms.Patch(ctx, "a", "application/merge-patch+json", []byte(`{"metadata":{"labels":{"app":"y"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatalf("patch through the metadata client: %v", err)
		}
		select {
		case app := <-seen:
			if app != "y" {
				t.Fatalf("informer saw app=%q", app)
			}
		case <-ictx.Done():
			t.Fatal("the informer saw no update")
		}
	})

	t.Run("JSON and protobuf, as asked", func(t *testing.T) {
		for _, tc := range []struct{ path, accept, wantType, wantKind string }{
			{"/api/v1/namespaces/default/configmaps/a", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1", "application/json", `"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1"`},
			{"/api/v1/namespaces/default/configmaps", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", "application/json", `"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1beta1"`},
			{"/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", protobufMediaType, "PartialObjectMetadataList"},
			// A list form for one object (and the reverse) is not what the client asked: the plain form after it answers.
			{"/api/v1/namespaces/default/configmaps/a", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", "application/json", `"kind":"ConfigMap"`},
		} {
			resp, body := ts.response(t, "GET", tc.path, "", "Accept", tc.accept)
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != tc.wantType || !strings.Contains(string(body), tc.wantKind) {
				t.Errorf("GET %s (%s): %d %s %.200s", tc.path, tc.accept, resp.StatusCode, resp.Header.Get("Content-Type"), body)
			}
			if strings.Contains(tc.wantKind, "PartialObjectMetadata") && strings.Contains(string(body), "value") {
				t.Errorf("GET %s (%s): the object's data came along: %.200s", tc.path, tc.accept, body)
			}
		}
		var partials metav1.PartialObjectMetadataList
		_, body := ts.response(t, "GET", "/api/v1/namespaces/default/configmaps", "", "Accept", "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1")
		if err := json.Unmarshal(body, &partials); err != nil || len(partials.Items) != 2 || partials.Items[1].Name != "b" ||
			partials.Items[0].Kind != "PartialObjectMetadata" || partials.ResourceVersion == "" {
			t.Fatalf("streamed JSON list: %v %s", err, body)
		}
		var partial metav1.PartialObjectMetadata
		_, body = ts.response(t, "GET", "/api/v1/namespaces/default/configmaps/a", "", "Accept", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
		if err := json.Unmarshal(body, &partial); err != nil || partial.Name != "a" {
			t.Fatalf("%v %s", err, body)
		}
	})
}
