package media

import (
	"encoding/binary"
	"math"
)

// Modality names, as in smg.grpc.common.Modality and the engines' modality strings.
const (
	ModalityImage = "image"
	ModalityVideo = "video"
)

// Item is one prepared media item: what prefill (or an encode worker) needs to run the vision
// tower, and what decode keeps to compute the same positions without pixels.
type Item struct {
	// Modality is ModalityImage or ModalityVideo.
	Modality string
	// Hash is the lowercase hex SHA-256 of the raw (undecoded) media bytes: the item's content
	// identity (vLLM mm_hashes, TokenSpeed content_hash, encode placement key).
	Hash string
	// PixelValues are the flattened patch rows, row-major with shape Shape.
	PixelValues []float32
	// Shape is [patches, channels*temporal_patch*patch*patch]; patches = T*H*W of GridTHW.
	Shape [2]int64
	// GridTHW is the patch grid (temporal, height, width) before the spatial merge: the
	// model's image_grid_thw row.
	GridTHW [3]int64
	// Tokens is the number of placeholder tokens the item takes in the prompt after the
	// spatial merge: T*H*W / merge_size².
	Tokens int
	// Width and Height are the decoded image's size in pixels; ResizedWidth and ResizedHeight
	// the size after smart_resize (multiples of patch*merge).
	Width, Height, ResizedWidth, ResizedHeight int
}

// PixelBytes returns PixelValues as little-endian float32 bytes (TensorData dtype "float32").
func (it *Item) PixelBytes() []byte {
	out := make([]byte, 4*len(it.PixelValues))
	for i, v := range it.PixelValues {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(v))
	}
	return out
}

// GridBytes returns the items' GridTHW rows as little-endian int64 bytes, shape [len(items), 3]
// (TensorData dtype "int64"), the image_grid_thw tensor of a batch.
func GridBytes(items []Item) []byte {
	out := make([]byte, 0, 24*len(items))
	for _, it := range items {
		for _, v := range it.GridTHW {
			out = binary.LittleEndian.AppendUint64(out, uint64(v))
		}
	}
	return out
}

// Hashes returns the items' content hashes in order.
func Hashes(items []Item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.Hash
	}
	return out
}
