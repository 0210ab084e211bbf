package cli

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/adapters/api"
)

// newOpenAPI is `smg openapi [--spec-version 3.0] [-o file]`: the OpenAPI 3.1 document of
// the gateway's inference, admin and health API (api.OpenAPIYAML, identical to GET
// /openapi.yaml), or its 3.0 downgrade (api.OpenAPI30YAML, GET /openapi-3.0.yaml), to
// stdout or to file.
func newOpenAPI(stdout io.Writer) *cobra.Command {
	var output, specVersion string
	cmd := &cobra.Command{
		Use:   "openapi [--spec-version 3.1|3.0] [-o file]",
		Short: "Write the OpenAPI document of the inference, admin and health API",
		Long: "Write the OpenAPI 3.1 document the gateway serves at /openapi.yaml (with --spec-version 3.0, " +
			"the 3.0 downgrade it serves at /openapi-3.0.yaml). `make openapi` regenerates the committed copies " +
			"(openapi/openapi.yaml, openapi/openapi-3.0.yaml) and the generated clients.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			gen := api.OpenAPIYAML
			switch specVersion {
			case "", "3.1":
			case "3.0":
				gen = api.OpenAPI30YAML
			default:
				return fmt.Errorf("openapi: --spec-version %q: want 3.1 or 3.0", specVersion)
			}
			doc, err := gen()
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
	cmd.Flags().StringVar(&specVersion, "spec-version", "3.1", "OpenAPI version: 3.1, or 3.0 (huma's downgrade, for 3.0-only generators)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to `file` instead of stdout")
	return cmd
}
