package api

import "github.com/danielgtaylor/huma/v2"

// apiTags are the document's top-level tags, in the order the /docs viewer lists them: every
// tag an operation uses is declared here with a description.
var apiTags = []*huma.Tag{
	{Name: tagInference, Description: "OpenAI, SGLang and Anthropic inference routes, relayed to a prefill/decode pair (errors in the data-plane body)."},
	{Name: tagModels, Description: "The models the registered workers serve."},
	{Name: tagWorkers, Description: "Worker registration, listing and removal (--admin-api-key when set; errors in the worker-API body)."},
	{Name: tagTenants, Description: "Tenants of --tenants-file with their limits and current usage (--admin-api-key when set)."},
	{Name: tagHealth, Description: "Liveness and readiness of the gateway itself, always open."},
}
