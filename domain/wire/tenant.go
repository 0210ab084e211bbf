package wire

// CodeTenantRateLimited (429, with Retry-After): the request's tenant is over one of its
// --tenants-file limits (requests_per_minute, prompt_tokens_per_minute,
// output_tokens_per_minute, max_concurrent_requests); the message names the limit and its
// value. Never a 503: the fleet is not the one that is full.
const CodeTenantRateLimited = "tenant_rate_limited"
