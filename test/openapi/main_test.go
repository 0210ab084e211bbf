// Package openapi_test checks the OpenAPI document against the running gateway: the
// generated Go client (clients/go/smgclient) calls the inference and admin routes of an
// in-process smg in front of simulated engines, and the routes the gateway mounts are the
// routes the document describes.
package openapi_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a gateway, simulator or client goroutine outlives the tests.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
