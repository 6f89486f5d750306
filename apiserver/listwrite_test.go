package apiserver

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// Lists are written item by item (JSON, protobuf, Tables); what a client
// decodes must be the list it always got, in every form.
func TestStreamedListsDecodeToTheWholeList(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	value := strings.Repeat("x", 4096) // 40 of them: over the gzip threshold
	for i := range 40 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%02d", i), Namespace: "default",
			Labels: map[string]string{"half": fmt.Sprint(i%2 == 0)}}, Data: map[string]string{"v": value}}
		if _, err := admin.ConfigMaps().Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	raw := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.config.TLS.Clone(), DisableCompression: true}}
	get := func(t *testing.T, path, accept string, gz bool) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, ts.config.Host+path, nil)
		req.Header.Set("Accept", accept)
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var body io.Reader = resp.Body
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if body, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		}
		data, err := io.ReadAll(body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, data
	}
	summary := func(list *corev1.ConfigMapList) string {
		var names []string
		for _, cm := range list.Items {
			if cm.ResourceVersion == "" || len(cm.Data["v"]) != len(value) {
				return "item " + cm.Name + " lacks its resourceVersion or data"
			}
			names = append(names, cm.Name)
		}
		return fmt.Sprintf("rv set %v, continue %q, %d items: %s", list.ResourceVersion != "", list.Continue, len(names), strings.Join(names, ","))
	}
	want, err := admin.ConfigMaps().List(t.Context(), "default", metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantAll := summary(&corev1.ConfigMapList{ListMeta: want.ListMeta, Items: want.Items})
	if !strings.Contains(wantAll, "40 items") {
		t.Fatalf("client list: %s", wantAll)
	}
	for _, tc := range []struct {
		name, path, accept string
		gz, gzipped        bool
		want               string
	}{
		{"JSON", "/api/v1/namespaces/default/configmaps", "application/json", false, false, wantAll},
		{"JSON, gzipped", "/api/v1/namespaces/default/configmaps", "application/json", true, true, wantAll},
		{"protobuf", "/api/v1/namespaces/default/configmaps", protobufMediaType, false, false, wantAll},
		{"protobuf, gzipped", "/api/v1/namespaces/default/configmaps", protobufMediaType, true, true, wantAll},
		{"protobuf, a page (items encoded before their length)", "/api/v1/namespaces/default/configmaps?limit=3", protobufMediaType, false, false, ""},
		{"protobuf, a selection", "/api/v1/namespaces/default/configmaps?labelSelector=half%3Dtrue", protobufMediaType, true, false, ""}, // 80 KiB: under the threshold,
		{"JSON of all namespaces", "/api/v1/configmaps?labelSelector=half", "application/json", false, false, wantAll},
		{"YAML", "/api/v1/namespaces/default/configmaps", "application/yaml", false, false, wantAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, data := get(t, tc.path, tc.accept, tc.gz)
			if (resp.Header.Get("Content-Encoding") == "gzip") != tc.gzipped {
				t.Fatalf("Content-Encoding %q, gzipped want %v", resp.Header.Get("Content-Encoding"), tc.gzipped)
			}
			var list corev1.ConfigMapList
			if tc.accept == "application/yaml" {
				var err error
				if data, err = yaml.YAMLToJSON(data); err != nil {
					t.Fatalf("YAML list: %v", err)
				}
			}
			if tc.accept == protobufMediaType {
				if resp.Header.Get("Content-Type") != protobufMediaType {
					t.Fatalf("Content-Type %q", resp.Header.Get("Content-Type"))
				}
				obj, gvk, err := protoSerializer.Decode(data, nil, nil)
				if err != nil {
					t.Fatalf("protobuf list: %v", err)
				}
				if gvk.Kind != "ConfigMapList" || gvk.Version != "v1" {
					t.Fatalf("kind %v", gvk)
				}
				list = *obj.(*corev1.ConfigMapList)
			} else if err := json.Unmarshal(data, &list); err != nil || list.Kind != "ConfigMapList" || list.APIVersion != "v1" {
				t.Fatalf("JSON list %s %s: %v", list.Kind, list.APIVersion, err)
			} else {
				// As kube-apiserver: the list names the kind once, its
				// items do not (in JSON and in YAML).
				var raw struct{ Items []map[string]json.RawMessage }
				if err := json.Unmarshal(data, &raw); err != nil {
					t.Fatal(err)
				}
				for _, item := range raw.Items {
					if item["kind"] != nil || item["apiVersion"] != nil || item["metadata"] == nil {
						t.Fatalf("an item with kind %s, apiVersion %s, metadata %.40s", item["kind"], item["apiVersion"], item["metadata"])
					}
				}
			}
			got := summary(&list)
			switch {
			case strings.Contains(tc.path, "limit=3"):
				if !strings.HasSuffix(got, "3 items: cm-00,cm-01,cm-02") || list.Continue == "" || list.RemainingItemCount == nil || *list.RemainingItemCount != 37 {
					t.Fatalf("page: %s remaining %v", got, list.RemainingItemCount)
				}
			case strings.Contains(tc.path, "half%3Dtrue"):
				if !strings.Contains(got, "20 items: cm-00,cm-02,") {
					t.Fatalf("selection: %s", got)
				}
			case strings.HasPrefix(tc.path, "/api/v1/configmaps"):
				if !strings.Contains(got, "40 items: cm-00,") {
					t.Fatalf("all namespaces: %s", got)
				}
			case got != tc.want:
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
	t.Run("a Table over several chunks has every row once, in order", func(t *testing.T) {
		old := tableChunk
		tableChunk = 7
		t.Cleanup(func() { tableChunk = old })
		for _, gz := range []bool{false, true} {
			_, data := get(t, "/api/v1/namespaces/default/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io", gz)
			var table metav1.Table
			if err := json.Unmarshal(data, &table); err != nil {
				t.Fatal(err)
			}
			if table.Kind != "Table" || len(table.ColumnDefinitions) == 0 || len(table.Rows) != 40 || table.ResourceVersion == "" {
				t.Fatalf("table: kind %q, %d columns, %d rows, rv %q", table.Kind, len(table.ColumnDefinitions), len(table.Rows), table.ResourceVersion)
			}
			for i, row := range table.Rows {
				if row.Cells[0] != fmt.Sprintf("cm-%02d", i) {
					t.Fatalf("row %d is %v", i, row.Cells[0])
				}
			}
		}
	})
	t.Run("an empty list is a list with no items, in each form", func(t *testing.T) {
		_, data := get(t, "/api/v1/namespaces/empty/configmaps", "application/json", false)
		if !strings.Contains(string(data), `"items":[]`) {
			t.Fatalf("JSON: %s", data)
		}
		_, data = get(t, "/api/v1/namespaces/empty/configmaps", protobufMediaType, false)
		obj, _, err := protoSerializer.Decode(data, nil, nil)
		if err != nil || len(obj.(*corev1.ConfigMapList).Items) != 0 {
			t.Fatalf("protobuf: %v", err)
		}
		_, data = get(t, "/api/v1/namespaces/empty/configmaps", "application/json;as=Table;v=v1;g=meta.k8s.io", false)
		var table metav1.Table
		if err := json.Unmarshal(data, &table); err != nil || len(table.ColumnDefinitions) == 0 || table.Rows == nil {
			t.Fatalf("table: %s, %v", data, err)
		}
	})
}

// A consistent list (no resourceVersion) is answered from the watch cache
// and still sees every write acknowledged before it; the list options are
// checked as upstream checks them.
func TestListsFromTheWatchCache(t *testing.T) {
	ts := startTestServer(t)
	admin := ts.client(t)
	for i := range 30 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%02d", i), Namespace: "default"}}
		created, err := admin.ConfigMaps().Create(t.Context(), cm, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		list, err := admin.ConfigMaps().List(t.Context(), "default", metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != i+1 || list.Items[i].ResourceVersion != created.ResourceVersion || atoi(list.ResourceVersion) < atoi(created.ResourceVersion) {
			t.Fatalf("after create %d at %s: %d items, list at %s", i, created.ResourceVersion, len(list.Items), list.ResourceVersion)
		}
	}
	t.Run("paging from the cache then etcd sees one revision", func(t *testing.T) {
		first, err := admin.ConfigMaps().List(t.Context(), "default", metav1.ListOptions{Limit: 10})
		if err != nil || len(first.Items) != 10 || first.Continue == "" {
			t.Fatalf("first page: %d items, continue %q, %v", len(first.Items), first.Continue, err)
		}
		if err := admin.ConfigMaps().Delete(t.Context(), "default", "c15", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		total := len(first.Items)
		for cont := first.Continue; cont != ""; {
			page, err := admin.ConfigMaps().List(t.Context(), "default", metav1.ListOptions{Limit: 10, Continue: cont})
			if err != nil {
				t.Fatal(err)
			}
			if page.ResourceVersion != first.ResourceVersion {
				t.Fatalf("page at %s, first at %s", page.ResourceVersion, first.ResourceVersion)
			}
			total += len(page.Items)
			cont = page.Continue
		}
		if total != 30 {
			t.Fatalf("paged %d items, want the 30 of the first page's revision", total)
		}
	})
	for _, tc := range []struct{ query, want string }{
		{"resourceVersionMatch=Exact", "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{"resourceVersion=0&resourceVersionMatch=Exact", `resourceVersionMatch "exact" is forbidden for resourceVersion "0"`},
		{"resourceVersion=1&resourceVersionMatch=Newest", "Unsupported value"},
	} {
		t.Run(tc.query+" answers 422", func(t *testing.T) {
			raw := &http.Client{Transport: &http.Transport{TLSClientConfig: ts.config.TLS.Clone()}}
			resp, err := raw.Get(ts.config.Host + "/api/v1/namespaces/default/configmaps?" + tc.query)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var st metav1.Status
			_ = json.NewDecoder(resp.Body).Decode(&st)
			if resp.StatusCode != http.StatusUnprocessableEntity || st.Details == nil || st.Details.Kind != "ListOptions" || !strings.Contains(st.Message, tc.want) {
				t.Fatalf("%d %+v", resp.StatusCode, st)
			}
		})
	}
}

func atoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}
