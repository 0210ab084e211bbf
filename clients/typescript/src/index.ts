// TypeScript client of the smg gateway. The types (schema.d.ts) are generated from
// openapi/openapi.yaml by openapi-typescript (`make openapi`); requests go through
// openapi-fetch, so every path, body, parameter and answer is checked by the compiler.
import createClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, paths } from "./schema";

export type { components, paths };

/** Request and answer shapes of the inference routes. */
export type ChatCompletionRequest = components["schemas"]["ChatCompletionRequest"];
export type ChatCompletion = components["schemas"]["ChatCompletion"];
export type ChatCompletionChunk = components["schemas"]["ChatCompletionChunk"];
export type MessagesRequest = components["schemas"]["MessagesRequest"];
export type Message = components["schemas"]["Message"];
/** The data-plane error body: {"error":{"type","code","message","param":null}}. */
export type DataError = components["schemas"]["DataError"];
/** The worker-management error body: {"error":"<text>","code":"<CODE>"}. */
export type WorkerError = components["schemas"]["WorkerError"];
export type WorkerSpec = components["schemas"]["WorkerSpec"];
export type WorkerList = components["schemas"]["WorkerList"];

/** Options of createSmgClient. */
export interface SmgClientOptions {
  /** The gateway's --api-key, sent as a Bearer token on the inference routes and /v1/models. */
  apiKey?: string;
  /** The gateway's --admin-api-key, sent as a Bearer token on /workers. */
  adminApiKey?: string;
  /** A fetch implementation (defaults to the global one). */
  fetch?: typeof globalThis.fetch;
}

/**
 * createSmgClient returns a typed client of the gateway at baseUrl (e.g.
 * "http://localhost:30000"), adding the admin key to /workers requests and the API key to
 * every other request.
 */
export function createSmgClient(baseUrl: string, opts: SmgClientOptions = {}): Client<paths> {
  const client = createClient<paths>({ baseUrl, fetch: opts.fetch });
  const auth: Middleware = {
    onRequest({ request, schemaPath }) {
      const key = schemaPath.startsWith("/workers") ? opts.adminApiKey : opts.apiKey;
      if (key) {
        request.headers.set("Authorization", `Bearer ${key}`);
      }
      return request;
    },
  };
  client.use(auth);
  return client;
}

/**
 * chatCompletion sends a non-streaming chat completion and returns its answer, or throws
 * the gateway's error body (DataError) with the HTTP status.
 */
export async function chatCompletion(
  client: Client<paths>,
  body: ChatCompletionRequest,
  requestId?: string,
): Promise<ChatCompletion> {
  const { data, error, response } = await client.POST("/v1/chat/completions", {
    body: { ...body, stream: false },
    params: { header: requestId ? { "X-Request-Id": requestId } : {} },
  });
  if (data) {
    // stream false: the answer is the application/json variant, not the event stream.
    return data as ChatCompletion;
  }
  throw new SmgError(response.status, error as DataError | undefined);
}

/**
 * parseChatStream reads a text/event-stream chat completion (stream true) and yields each
 * chunk until data: [DONE].
 */
export async function* parseChatStream(body: ReadableStream<Uint8Array>): AsyncGenerator<ChatCompletionChunk> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return;
    }
    buf += decoder.decode(value, { stream: true });
    let nl: number;
    while ((nl = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, nl).trimEnd();
      buf = buf.slice(nl + 1);
      if (!line.startsWith("data: ")) {
        continue;
      }
      const data = line.slice("data: ".length);
      if (data === "[DONE]") {
        return;
      }
      yield JSON.parse(data) as ChatCompletionChunk;
    }
  }
}

/** SmgError is a gateway error answer: the HTTP status and the parsed error body. */
export class SmgError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  constructor(status: number, body?: DataError) {
    super(body?.error.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = body?.error.code;
  }
}

/** listWorkers returns GET /workers, or throws the worker-API error. */
export async function listWorkers(client: Client<paths>): Promise<WorkerList> {
  const { data, error, response } = await client.GET("/workers", {});
  if (data) {
    return data;
  }
  const e = error as WorkerError | undefined;
  throw new Error(`GET /workers: ${response.status} ${e?.code ?? ""} ${e?.error ?? ""}`);
}
