package worker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"http://10.0.0.1:8000":         "http://10.0.0.1:8000",
		"http://user:pw@10.0.0.1:8000": "http://redacted@10.0.0.1:8000",
		"https://tok@h:443/v1":         "https://redacted@h:443/v1",
		"http://u:p@h:8000@2":          "http://redacted@h:8000@2",
		"http://h:8000/path@x":         "http://h:8000/path@x",
		"grpc://a:b@[::1]:50051":       "grpc://redacted@[::1]:50051",
		"ipc:///tmp/sock":              "ipc:///tmp/sock",
		"http://u:p%zz@h:1":            "http://redacted@h:1",
		"not a url":                    "not a url",
	} {
		assert.Equal(t, want, worker.RedactURL(in), in)
	}
	assert.Equal(t, "http://redacted@h:1", worker.Worker{URL: "http://a:b@h:1"}.DisplayURL())
}
