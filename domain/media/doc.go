// Package media prepares multimodal items for gRPC engines the way the model's Hugging Face
// processor would: it decodes an image, resizes it with the Qwen2-VL / Qwen2.5-VL
// smart_resize rule, normalizes it, cuts it into the patch rows the vision tower takes, and
// expands the image placeholder in the prompt token ids. It is pure Go: fetching the bytes
// (data URLs, http URLs) is an adapter's job.
package media
