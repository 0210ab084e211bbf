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
//
// The messages are read in one pass and each URL is copied once, into its string: a 15 MB
// data URL is not also kept as the raw content and the raw part on the way.
func ChatRefs(messages json.RawMessage) ([]Ref, error) {
	if len(messages) == 0 {
		return nil, nil
	}
	var msgs []struct {
		Content contentRefs `json:"content"`
	}
	if err := json.Unmarshal(messages, &msgs); err != nil {
		return nil, fmt.Errorf("messages: %w", err)
	}
	var out []Ref
	for i, m := range msgs {
		if m.Content.err != nil {
			return nil, fmt.Errorf("messages[%d].content: %w", i, m.Content.err)
		}
		for j, p := range m.Content.parts {
			var u string
			switch p.Type {
			case "image_url":
				u = string(p.ImageURL)
			case "image":
				u = string(p.Image)
			default:
				continue
			}
			if u == "" {
				return nil, fmt.Errorf("messages[%d].content[%d]: the %s part has no url", i, j, p.Type)
			}
			out = append(out, Ref{Modality: ModalityImage, URL: u})
		}
	}
	return out, nil
}

// contentRefs is a message's content as ChatRefs reads it: the parts of a list, nothing for
// a string (or any other value); a list that does not parse is kept as err, for ChatRefs to
// name the message.
type contentRefs struct {
	parts []contentPart
	err   error
}

type contentPart struct {
	Type     string  `json:"type"`
	ImageURL partURL `json:"image_url"`
	Image    partURL `json:"image"`
}

// UnmarshalJSON implements json.Unmarshaler.
func (c *contentRefs) UnmarshalJSON(b []byte) error {
	if len(b) == 0 || b[0] != '[' {
		return nil
	}
	c.err = json.Unmarshal(b, &c.parts)
	return nil
}

// partURL is a part's URL, given as "url" or {"url": "url"}; "" for anything else.
type partURL string

// UnmarshalJSON implements json.Unmarshaler.
func (u *partURL) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*u = partURL(s)
		return nil
	}
	var o struct {
		URL string `json:"url"`
	}
	_ = json.Unmarshal(b, &o)
	*u = partURL(o.URL)
	return nil
}
