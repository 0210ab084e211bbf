package media

import "fmt"

// Placeholder is where one item's tokens sit in the expanded prompt: Length copies of the
// placeholder token starting at Offset (the engines' PlaceholderRange).
type Placeholder struct {
	Offset int
	Length int
}

// ExpandPlaceholders replaces the i-th occurrence of padID in ids (the chat template's single
// <|image_pad|> between <|vision_start|> and <|vision_end|>) by items[i].Tokens copies and
// returns the expanded ids with one Placeholder per item. The count of padID occurrences must
// equal len(items); ids is not modified.
func ExpandPlaceholders(ids []uint32, padID uint32, items []Item) ([]uint32, []Placeholder, error) {
	n := 0
	extra := 0
	for _, id := range ids {
		if id == padID {
			if n < len(items) {
				extra += items[n].Tokens - 1
			}
			n++
		}
	}
	if n != len(items) {
		return nil, nil, fmt.Errorf("media: the prompt has %d image placeholders for %d images", n, len(items))
	}
	out := make([]uint32, 0, len(ids)+extra)
	places := make([]Placeholder, 0, len(items))
	k := 0
	for _, id := range ids {
		if id != padID {
			out = append(out, id)
			continue
		}
		t := items[k].Tokens
		if t <= 0 {
			return nil, nil, fmt.Errorf("media: item %d has no tokens", k)
		}
		places = append(places, Placeholder{Offset: len(out), Length: t})
		for j := 0; j < t; j++ {
			out = append(out, padID)
		}
		k++
	}
	return out, places, nil
}
