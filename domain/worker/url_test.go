package worker_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
)

func TestValidateURLRefusesNumericHostsThatAreNotIPs(t *testing.T) {
	t.Parallel()
	refused := []string{
		"http://127.1:8000",
		"http://0x7f000001:8000",
		"http://2130706433:8000",
		"http://0177.0.0.1:8000",
		"grpc://10.1:50051",
		"http://gpu.0X1F:8000",
	}
	for _, u := range refused {
		_, err := worker.ValidateURL(u)
		if assert.Error(t, err, u) {
			assert.True(t, errors.Is(err, worker.ErrInvalidURL), u)
			assert.Contains(t, err.Error(), "neither an IP address in standard form nor a DNS name", u)
		}
	}
	accepted := []string{
		"http://127.0.0.1:8000",
		"http://[::1]:8000",
		"http://[fe80::1%25eth0]:8000",
		"http://gpu-0:8000",
		"http://prefill-0.prefill.svc.cluster.local:8000",
		"http://10-0-0-5.pods:8000",
		"http://127.0.0.1:8000@3",
		"grpc://decode.example:50051",
	}
	for _, u := range accepted {
		_, err := worker.ValidateURL(u)
		assert.NoError(t, err, u)
	}
}
