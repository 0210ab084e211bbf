// Package respond builds the responses the gateway itself produces on the gRPC path, where
// engines return token ids: OpenAI chat completions, completions, SGLang /generate, Anthropic
// messages (and count_tokens) and OpenAI responses, streaming (SSE, in each API's own event
// shapes) and not; and the parsers that turn model text into tool calls and reasoning
// (Qwen3 <tool_call>/<think>, Llama-3 JSON tool calls), selected by --tool-call-parser and
// --reasoning-parser or by model family. Pure: it consumes text and engine numbers, never a
// connection.
package respond
