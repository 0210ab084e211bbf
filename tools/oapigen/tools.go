//go:build tools

// Package oapigen pins the generator of the Go client (clients/go/smgclient): oapi-codegen
// at the version in go.mod, run with `go -C tools/oapigen run` by tools/oapigen/gen.sh, so
// neither it nor its dependencies enter the gateway's module.
package oapigen

import _ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
