// Package cri holds the generated code of minik's mini-CRI (cri.proto):
// messages, the RuntimeService and ImageService clients and servers. It
// holds no logic. Regenerate with `go generate ./proto/...` (needs protoc,
// protoc-gen-go and protoc-gen-go-grpc on PATH).
package cri

//go:generate protoc --go_out=. --go_opt=paths=source_relative --go-grpc_out=. --go-grpc_opt=paths=source_relative cri.proto
