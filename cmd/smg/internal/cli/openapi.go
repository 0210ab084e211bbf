package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/adapters/api"
)

// newOpenAPI is `smg openapi [-o file]`: the OpenAPI 3.1 document of the admin/health API
// (api.OpenAPIYAML, identical to GET /openapi.yaml), to stdout or to file.
func newOpenAPI(stdout io.Writer) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "openapi [-o file]",
		Short: "Write the OpenAPI 3.1 document of the admin and health API",
		Long: "Write the OpenAPI 3.1 document the gateway serves at /openapi.yaml. " +
			"`smg openapi -o openapi/openapi.yaml` (or `make openapi`) regenerates the committed copy.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			doc, err := api.OpenAPIYAML()
			if err != nil {
				return &runError{fmt.Errorf("openapi: %w", err)}
			}
			if output == "" || output == "-" {
				_, err = stdout.Write(doc)
			} else {
				err = os.WriteFile(output, doc, 0o644)
			}
			if err != nil {
				return &runError{fmt.Errorf("openapi: %w", err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to `file` instead of stdout")
	return cmd
}
