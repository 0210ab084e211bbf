package api

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/danielgtaylor/huma/v2"
)

// mountOpenAPI serves the API's document at OpenAPIPath + ".json" and ".yaml", and its 3.0
// downgrade at "-3.0.json" and "-3.0.yaml" (the bytes huma's own handlers serve). Each is
// rendered once, on its first request, so every operation registered after NewHumaAPI is
// in it; huma's handlers cache in an unguarded variable, a data race when the first
// requests arrive together (a browser and a generator, two /docs pages).
func mountOpenAPI(mux *http.ServeMux, h huma.API) {
	for _, d := range []struct {
		suffix, contentType string
		render              func(*huma.OpenAPI) ([]byte, error)
	}{
		{".json", "application/openapi+json", func(o *huma.OpenAPI) ([]byte, error) { return json.Marshal(o) }},
		{"-3.0.json", "application/openapi+json", (*huma.OpenAPI).Downgrade},
		{".yaml", "application/openapi+yaml", (*huma.OpenAPI).YAML},
		{"-3.0.yaml", "application/openapi+yaml", (*huma.OpenAPI).DowngradeYAML},
	} {
		doc := sync.OnceValues(func() ([]byte, error) { return d.render(h.OpenAPI()) })
		mux.HandleFunc("GET "+OpenAPIPath+d.suffix, func(w http.ResponseWriter, _ *http.Request) {
			b, err := doc()
			if err != nil {
				http.Error(w, "cannot render the OpenAPI document: "+err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", d.contentType)
			_, _ = w.Write(b)
		})
	}
}
