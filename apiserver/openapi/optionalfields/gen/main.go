// Command gen writes apiserver/openapi/optional_gen.go (go generate in
// apiserver/openapi runs it): the fields optionalfields.Find reports.
package main

import (
	"fmt"
	"os"

	"minik/apiserver/openapi/optionalfields"
)

func main() {
	out := "optional_gen.go"
	if len(os.Args) > 1 {
		out = os.Args[1]
	}
	fields, err := optionalfields.Find(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(out, []byte(optionalfields.Render(fields)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "%s: %d fields\n", out, len(fields))
}
