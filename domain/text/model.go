package text

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"
)

// Model is everything the text pipeline needs for one served model.
type Model struct {
	Tokenizer *Tokenizer
	Config    *TokenizerConfig // empty when there is no tokenizer_config.json
	// ChatTemplate is nil when no template was found (chat requests then fail clearly).
	ChatTemplate *ChatTemplate
	// ToolTemplate is tokenizer_config.json's named "tool_use" template, used instead of
	// ChatTemplate for requests with tools (as transformers does); nil when absent.
	ToolTemplate *ChatTemplate
	// Source says where it was loaded from (for logs and errors).
	Source string
}

// ErrHubID is returned for a source that is not a local path: SMG would take it as a
// HuggingFace hub id, which cannot be fetched from here.
var ErrHubID = errors.New("not a local path (HuggingFace hub ids cannot be fetched by this gateway)")

// ErrNoTokenizerFile is returned for a directory without a tokenizer file.
var ErrNoTokenizerFile = errors.New("no tokenizer.json in the directory")

// LoadOptions are the parts of a load that come from flags.
type LoadOptions struct {
	// ChatTemplatePath is --chat-template: a template file that wins over any found beside the
	// tokenizer. Read through the local filesystem even for a bundle.
	ChatTemplatePath string
	// Now is the clock for strftime_now (nil: time.Now).
	Now func() time.Time
}

// LoadModel loads the tokenizer at p (crates/tokenizer/src/factory.rs order): a directory is
// searched for tokenizer.json, then vocab.json+merges.txt and tiktoken files (both reported as
// unsupported); a file is taken by its extension (.json only). A path that does not exist is
// ErrHubID. The chat template is opts.ChatTemplatePath, else chat_template.json, else
// chat_template.jinja, else another *.jinja, else tokenizer_config.json's chat_template.
func LoadModel(files Files, p string, opts LoadOptions) (*Model, error) {
	isDir, err := files.IsDir(p)
	if notExist(err) {
		return nil, fmt.Errorf("text: tokenizer source %q: %w", p, ErrHubID)
	}
	if err != nil {
		return nil, fmt.Errorf("text: tokenizer source %q: %w", p, err)
	}
	dir, tokFile := p, ""
	if isDir {
		tokFile, err = findTokenizerFile(files, p)
		if err != nil {
			return nil, err
		}
	} else {
		if !strings.EqualFold(filepath.Ext(p), ".json") {
			return nil, unsupported("tokenizer file %q (only a HF tokenizer.json is supported)", p)
		}
		tokFile, dir = p, parentDir(p)
	}
	data, err := files.ReadFile(tokFile)
	if err != nil {
		return nil, fmt.Errorf("text: %w", err)
	}
	tok, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tokFile, err)
	}
	m := &Model{Tokenizer: tok, Config: &TokenizerConfig{}, Source: p}
	if cfgData, err := files.ReadFile(files.Join(dir, "tokenizer_config.json")); err == nil {
		if m.Config, err = ParseTokenizerConfig(cfgData); err != nil {
			return nil, err
		}
	} else if !notExist(err) {
		return nil, fmt.Errorf("text: %w", err)
	}
	src, err := findChatTemplate(files, dir, m.Config, opts.ChatTemplatePath)
	if err != nil {
		return nil, err
	}
	topts := m.Config.TemplateOptions()
	topts.Now = opts.Now
	if src != "" {
		if m.ChatTemplate, err = CompileChatTemplate(src, topts); err != nil {
			return nil, err
		}
	}
	if m.Config.ToolTemplate != "" && opts.ChatTemplatePath == "" {
		if m.ToolTemplate, err = CompileChatTemplate(m.Config.ToolTemplate, topts); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func parentDir(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[:i+1]
	}
	return "."
}

func findTokenizerFile(files Files, dir string) (string, error) {
	names, err := files.List(dir)
	if err != nil {
		return "", fmt.Errorf("text: %w", err)
	}
	has := map[string]bool{}
	tiktoken := false
	for _, n := range names {
		has[n] = true
		tiktoken = tiktoken || strings.HasSuffix(n, ".tiktoken")
	}
	switch {
	case has["tokenizer.json"]:
		return files.Join(dir, "tokenizer.json"), nil
	case has["vocab.json"] && has["merges.txt"]:
		return "", unsupported("%s holds vocab.json+merges.txt without tokenizer.json", dir)
	case has["tiktoken.model"] || tiktoken:
		return "", unsupported("%s holds a tiktoken model", dir)
	case has["tokenizer.model"]:
		return "", unsupported("%s holds only a SentencePiece tokenizer.model", dir)
	}
	return "", fmt.Errorf("text: %s: %w", dir, ErrNoTokenizerFile)
}

func findChatTemplate(files Files, dir string, cfg *TokenizerConfig, explicit string) (string, error) {
	if explicit != "" {
		b, err := OSFiles{}.ReadFile(explicit)
		if err != nil {
			return "", fmt.Errorf("text: --chat-template: %w", err)
		}
		return string(b), nil
	}
	if b, err := files.ReadFile(files.Join(dir, "chat_template.json")); err == nil {
		var ct struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(b, &ct); err != nil {
			return "", fmt.Errorf("text: chat_template.json: %w", err)
		}
		def, _, err := parseChatTemplateField(ct.ChatTemplate)
		return def, err
	}
	names, _ := files.List(dir)
	for _, pick := range []func(string) bool{
		func(n string) bool { return n == "chat_template.jinja" },
		func(n string) bool { return strings.HasSuffix(n, ".jinja") },
	} {
		for _, n := range names {
			if pick(n) {
				b, err := files.ReadFile(files.Join(dir, n))
				if err != nil {
					return "", fmt.Errorf("text: %w", err)
				}
				return string(b), nil
			}
		}
	}
	return cfg.ChatTemplate, nil
}

// ErrNoChatTemplate is returned for a chat request to a model without a chat template (no
// --chat-template, no template beside its tokenizer).
var ErrNoChatTemplate = errors.New("the model has no chat template (set --chat-template)")

// ChatPrompt renders a chat request and encodes it without special tokens, as SMG does for
// chat completions (grpc.md §1.14): the prompt text and its token ids. len(ids) is what
// count_tokens answers and what the context-length check compares.
func (m *Model) ChatPrompt(in ChatInput) (prompt string, ids []uint32, err error) {
	tmpl := m.ChatTemplate
	if m.ToolTemplate != nil && len(in.Tools) > 0 && string(in.Tools) != "null" && string(in.Tools) != "[]" {
		tmpl = m.ToolTemplate
	}
	if tmpl == nil {
		return "", nil, ErrNoChatTemplate
	}
	prompt, err = tmpl.Render(in)
	if err != nil {
		return "", nil, err
	}
	return prompt, m.Tokenizer.Encode(prompt, false), nil
}

// CheckLocal reports whether p can be a local tokenizer source: nil when it exists, an
// error wrapping ErrHubID when it does not (SMG would take it as a HuggingFace hub id and
// fetch it; this gateway cannot), else the error reading it. Nothing is loaded.
func CheckLocal(files Files, p string) error {
	_, err := files.IsDir(p)
	if notExist(err) {
		return fmt.Errorf("text: tokenizer source %q: %w", p, ErrHubID)
	}
	return err
}
