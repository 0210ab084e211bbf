package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/adapters/api"
)

// newOpenAPI is `smg openapi [--spec-version 3.0] [--format yaml|json] [-o file]`: the
// OpenAPI 3.1 document of the gateway's inference, admin and health API (identical to GET
// /openapi.yaml or /openapi.json), or its 3.0 downgrade (GET /openapi-3.0.*), to stdout or
// to file. Without --format the format is the file's extension (.json → JSON), else YAML.
func newOpenAPI(stdout io.Writer) *cobra.Command {
	var output, specVersion, format string
	cmd := &cobra.Command{
		Use:   "openapi [--spec-version 3.1|3.0] [--format yaml|json] [-o file]",
		Short: "Write the OpenAPI document of the inference, admin and health API",
		Long: "Write the OpenAPI 3.1 document the gateway serves at /openapi.yaml and /openapi.json (with --spec-version 3.0, " +
			"the 3.0 downgrade it serves at /openapi-3.0.*). Without --format, -o x.json writes JSON and anything else YAML. " +
			"`make openapi` regenerates the committed copies (openapi/openapi.yaml, openapi/openapi-3.0.yaml) and the generated clients.",
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if format == "" {
				format = "yaml"
				if strings.EqualFold(filepath.Ext(output), ".json") {
					format = "json"
				}
			}
			gen, err := openAPIGenerator(specVersion, format)
			if err != nil {
				return err
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
	cmd.Flags().StringVar(&format, "format", "", "yaml or json (default: json when -o ends in .json, else yaml)")
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to `file` instead of stdout")
	return cmd
}

// openAPIGenerator picks the document builder for a spec version and format; an unknown
// value is a usage error.
func openAPIGenerator(specVersion, format string) (func() ([]byte, error), error) {
	var v30 bool
	switch specVersion {
	case "", "3.1":
	case "3.0":
		v30 = true
	default:
		return nil, fmt.Errorf("openapi: --spec-version %q: want 3.1 or 3.0", specVersion)
	}
	switch strings.ToLower(format) {
	case "yaml", "yml":
		if v30 {
			return api.OpenAPI30YAML, nil
		}
		return api.OpenAPIYAML, nil
	case "json":
		if v30 {
			return api.OpenAPI30JSON, nil
		}
		return api.OpenAPIJSON, nil
	}
	return nil, fmt.Errorf("openapi: --format %q: want yaml or json", format)
}
