package media

import (
	"encoding/json"
	"fmt"
)

// Ref is one media reference of a chat request, in message order.
type Ref struct {
	Modality string
	// URL is a data: or http(s) URL as the client sent it.
	URL string
}

// ChatRefs returns the media references of OpenAI-shape chat messages in order: content
// parts {"type":"image_url","image_url":{"url":…}} (or "image_url" as a string) and
// {"type":"image","image":…}, the parts the Qwen2-VL chat template renders as
// <|vision_start|><|image_pad|><|vision_end|>. String content has none. Malformed messages
// are an error; a part without a URL is an error.
func ChatRefs(messages json.RawMessage) ([]Ref, error) {
	if len(messages) == 0 {
		return nil, nil
	}
	var msgs []struct {
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(messages, &msgs); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	var out []Ref
	for i, m := range msgs {
		if len(m.Content) == 0 || m.Content[0] != '[' {
			continue
		}
		var parts []struct {
			Type     string          `json:"type"`
			ImageURL json.RawMessage `json:"image_url"`
			Image    json.RawMessage `json:"image"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, err)
		}
		for j, p := range parts {
			var raw json.RawMessage
			switch p.Type {
			case "image_url":
				raw = p.ImageURL
			case "image":
				raw = p.Image
			default:
				continue
			}
			u := urlOf(raw)
			if u == "" {
				return nil, fmt.Errorf("messages[%d].content[%d]: the %s part has no url", i, j, p.Type)
			}
			out = append(out, Ref{Modality: ModalityImage, URL: u})
		}
	}
	return out, nil
}

// urlOf reads "url" or {"url": "url"}.
func urlOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var o struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(raw, &o)
	return o.URL
}
