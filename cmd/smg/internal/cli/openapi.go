package cli

import (
	"io"

	"github.com/spf13/cobra"
)

// newOpenAPI is `smg openapi [-o file]`; wired to the API document once adapters/api lands.
func newOpenAPI(stdout io.Writer) *cobra.Command {
	return &cobra.Command{Use: "openapi", Short: "Print the OpenAPI 3.1 document", Hidden: true, Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return &runError{errNoAPI} }}
}
