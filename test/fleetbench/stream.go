package fleetbench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/wire"
)

// chatBody is the OpenAI chat completions request the bench sends: streamed, with the usage
// chunk (stream_options.include_usage) that carries completion_tokens.
type chatBody struct {
	Model         string          `json:"model"`
	Messages      []Message       `json:"messages"`
	MaxTokens     int             `json:"max_tokens"`
	Stream        bool            `json:"stream"`
	StreamOptions map[string]bool `json:"stream_options"`
}

// chunk is the part of a chat.completion.chunk (or an in-stream error) the bench reads.
type chunk struct {
	Choices []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// streamChat POSTs rq to base+/v1/chat/completions with X-Smg-Routing-Key rq.Key and reads
// the SSE stream to its [DONE]. It returns the time from start to the first chunk with
// content, the output tokens, and "" or why the request failed (transport error, non-2xx,
// an error event, no content, no [DONE]).
func streamChat(ctx context.Context, hc *http.Client, base, model string, rq Request, start time.Time) (time.Duration, int, string) {
	body, err := json.Marshal(chatBody{Model: model, Messages: rq.Messages, MaxTokens: rq.MaxTokens, Stream: true,
		StreamOptions: map[string]bool{"include_usage": true}})
	if err != nil {
		return 0, 0, err.Error()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+wire.PathChatCompletions, bytes.NewReader(body))
	if err != nil {
		return 0, 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	if rq.Key != "" {
		req.Header.Set(wire.HeaderRoutingKey, rq.Key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, 0, err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 300))
		return 0, 0, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b))
	}
	var (
		ttft             time.Duration
		tokens, contents int
		usage            = -1
	)
	br := bufio.NewReaderSize(resp.Body, 16<<10)
	for {
		line, err := br.ReadBytes('\n')
		if data, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if string(data) == "[DONE]" {
				break
			}
			var c chunk
			if e := json.Unmarshal(data, &c); e != nil {
				return ttft, tokens, fmt.Sprintf("bad chunk %.200q: %v", data, e)
			}
			if len(c.Error) > 0 && string(c.Error) != "null" {
				return ttft, tokens, fmt.Sprintf("error event: %.300s", c.Error)
			}
			for _, ch := range c.Choices {
				if ch.Delta.Content != "" {
					if contents == 0 {
						ttft = time.Since(start)
					}
					contents++
				}
			}
			if c.Usage != nil {
				usage = c.Usage.CompletionTokens
			}
		}
		if err != nil {
			if err == io.EOF {
				return ttft, tokens, "stream ended without [DONE]"
			}
			return ttft, tokens, err.Error()
		}
	}
	if contents == 0 {
		return 0, 0, "stream without content"
	}
	tokens = contents
	if usage >= 0 {
		tokens = usage
	}
	return ttft, tokens, ""
}
