package policy

import (
	"math/rand/v2"

	"github.com/smg-go/smg/domain/worker"
)

// minLoad returns the index of the candidate with the fewest in-flight requests, ties broken
// uniformly at random (reservoir sampling), or -1 for an empty slice.
func minLoad(c []*worker.Live) int { return minLoadBy(c, LoadRequests) }

// minLoadBy is minLoad over the load metric m (LoadRequests or LoadTokens): the candidate
// with the fewest in-flight requests or tokens, ties random; -1 for an empty slice.
func minLoadBy(c []*worker.Live, m string) int {
	best, ties := -1, 0
	var bestLoad int64
	for i, w := range c {
		l := loadOf(w, m)
		switch {
		case best < 0 || l < bestLoad:
			best, bestLoad, ties = i, l, 1
		case l == bestLoad:
			ties++
			if rand.IntN(ties) == 0 {
				best = i
			}
		}
	}
	return best
}

// randomIndex returns a uniform index into c, or -1 for an empty slice.
func randomIndex(c []*worker.Live) int {
	if len(c) == 0 {
		return -1
	}
	return rand.IntN(len(c))
}

// indexOfURL returns the index of the candidate registered at url, or -1.
func indexOfURL(c []*worker.Live, url string) int {
	for i, w := range c {
		if w.URL == url {
			return i
		}
	}
	return -1
}

// loadStats returns the candidates' total and mean in-flight load.
func loadStats(c []*worker.Live) (total int64, avg float64) {
	for _, w := range c {
		total += w.Load()
	}
	if len(c) > 0 {
		avg = float64(total) / float64(len(c))
	}
	return total, avg
}

// loadOf is w's gateway-side load under metric m: in-flight tokens for LoadTokens, else
// in-flight requests.
func loadOf(w *worker.Live, m string) int64 {
	if m == LoadTokens {
		return w.TokenLoad()
	}
	return w.Load()
}
