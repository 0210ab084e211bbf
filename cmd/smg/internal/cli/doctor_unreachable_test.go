package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

// With --json, a gateway the doctor cannot ask (refused, or 401 without the admin key) still
// gets a JSON report on stdout: ok false and one gateway_unreachable error naming why, and
// exit 1.
func TestDoctorJSONWhenTheGatewayCannotBeAsked(t *testing.T) {
	t.Parallel()
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = w.Write([]byte(`{"error":"admin key required","code":"UNAUTHORIZED"}`))
	}))
	t.Cleanup(denied.Close)
	for name, url := range map[string]string{"refused": closed.URL, "unauthorized": denied.URL} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI([]string{"doctor", "--url", url, "--json", "--no-health-probe"}, nil)
			assert.Equal(t, 1, code)
			assert.NotEmpty(t, errOut)
			var rep struct {
				Gateway  string `json:"gateway"`
				OK       bool   `json:"ok"`
				Findings []struct {
					Kind, Severity, Message string
				} `json:"findings"`
			}
			require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
			assert.Equal(t, url, rep.Gateway)
			assert.False(t, rep.OK)
			require.Len(t, rep.Findings, 1)
			assert.Equal(t, cli.KindGatewayUnreachable, rep.Findings[0].Kind)
			assert.Equal(t, "error", rep.Findings[0].Severity)
			assert.NotEmpty(t, rep.Findings[0].Message)
		})
	}
}
