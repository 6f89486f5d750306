package images

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"testing"
)

func TestWriteOCIArchive(t *testing.T) {
	files := []File{{Path: "bin", Mode: 0o755, Dir: true}, {Path: "bin/hello", Mode: 0o755, Data: []byte("#!/bin/sh\necho hi\n")},
		{Path: "bin/hi", Mode: 0o777, Linkname: "hello"}}
	var a, b bytes.Buffer
	if err := WriteOCIArchive(&a, "example.com/x:1", files, []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if err := WriteOCIArchive(&b, "example.com/x:1", files, []string{"hello"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two builds of the same files differ: the archive must be reproducible")
	}
	entries := map[string][]byte{}
	tr := tar.NewReader(&a)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		entries[h.Name] = data
	}
	if string(entries["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", entries["oci-layout"])
	}
	var index struct {
		Manifests []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	if err := json.Unmarshal(entries["index.json"], &index); err != nil {
		t.Fatal(err)
	}
	if len(index.Manifests) != 1 || index.Manifests[0].Annotations["io.containerd.image.name"] != "example.com/x:1" ||
		index.Manifests[0].Annotations["org.opencontainers.image.ref.name"] != "1" {
		t.Fatalf("index %+v", index)
	}
	if _, ok := entries["blobs/sha256/"+index.Manifests[0].Digest[len("sha256:"):]]; !ok {
		t.Error("the manifest blob named by index.json is missing")
	}
}
