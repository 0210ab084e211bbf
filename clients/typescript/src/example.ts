// Usage of the client, compiled by tools/tsclient/check.sh (make openapi-check) so the
// documented calls keep type-checking against the generated types.
import { createSmgClient, chatCompletion, parseChatStream } from "./index";
/** demo sends a chat completion, lists the workers and reads a streamed completion. */
export async function demo(apiKey: string, adminApiKey: string) {
  const smg = createSmgClient("http://localhost:30000", { apiKey, adminApiKey });
  const answer = await chatCompletion(smg, { model: "Qwen/Qwen3-8B", messages: [{ role: "user", content: "Hello" }] });
  const { data: workers } = await smg.GET("/workers", {});
  const { response } = await smg.POST("/v1/chat/completions", { body: { model: "m", messages: [{ role: "user", content: "x" }], stream: true }, parseAs: "stream" });
  for await (const ch of parseChatStream(response.body!)) { console.log(ch.choices[0]?.delta.content); }
  return [answer.choices[0]?.message.content, workers?.total];
}
