package text

import (
	"encoding/json"
	"fmt"
)

// TokenizerConfig is what the gateway reads from tokenizer_config.json: the chat template and
// the special tokens a template sees.
type TokenizerConfig struct {
	// ChatTemplate is the "chat_template" string, or the "default" entry of its list form.
	ChatTemplate string
	// ToolTemplate is the "tool_use" entry of the list form, if any.
	ToolTemplate                           string
	BOSToken, EOSToken, UNKToken, PADToken string
	// AddBOSToken is "add_bos_token" (absent: false).
	AddBOSToken bool
}

// ParseTokenizerConfig reads tokenizer_config.json. Tokens may be strings or AddedToken
// objects ({"content": ...}); null or absent leaves them empty.
func ParseTokenizerConfig(data []byte) (*TokenizerConfig, error) {
	var raw struct {
		ChatTemplate json.RawMessage `json:"chat_template"`
		BOS          json.RawMessage `json:"bos_token"`
		EOS          json.RawMessage `json:"eos_token"`
		UNK          json.RawMessage `json:"unk_token"`
		PAD          json.RawMessage `json:"pad_token"`
		AddBOS       bool            `json:"add_bos_token"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("text: tokenizer_config.json: %w", err)
	}
	c := &TokenizerConfig{AddBOSToken: raw.AddBOS}
	var err error
	if c.ChatTemplate, c.ToolTemplate, err = parseChatTemplateField(raw.ChatTemplate); err != nil {
		return nil, err
	}
	c.BOSToken, c.EOSToken, c.UNKToken, c.PADToken = tokenText(raw.BOS), tokenText(raw.EOS), tokenText(raw.UNK), tokenText(raw.PAD)
	return c, nil
}

// TemplateOptions returns the special tokens as template options (clock unset).
func (c *TokenizerConfig) TemplateOptions() TemplateOptions {
	return TemplateOptions{BOSToken: c.BOSToken, EOSToken: c.EOSToken, UNKToken: c.UNKToken, PADToken: c.PADToken}
}

// parseChatTemplateField reads a chat_template value: a string, or a list of {name, template}.
func parseChatTemplateField(raw json.RawMessage) (def, tool string, err error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", "", nil
	}
	if err := json.Unmarshal(raw, &def); err == nil {
		return def, "", nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return "", "", fmt.Errorf("text: chat_template is neither a string nor a list of {name, template}")
	}
	for _, n := range named {
		switch n.Name {
		case "default":
			def = n.Template
		case "tool_use":
			tool = n.Template
		}
	}
	return def, tool, nil
}

func tokenText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj struct {
		Content string `json:"content"`
	}
	if json.Unmarshal(raw, &obj) == nil {
		return obj.Content
	}
	return ""
}
