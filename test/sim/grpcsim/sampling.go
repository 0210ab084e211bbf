package grpcsim

// maxSampled bounds how many Generate RPCs' sampling knobs an instance keeps.
const maxSampled = 4096

// Sampling is the sampling knobs one Generate RPC carried, as the engine read them (SGLang
// and vLLM fields that are not optional are always set; nil = TokenSpeed/vLLM optional
// field unset).
type Sampling struct {
	RequestID                                  string
	Temperature, TopP, MinP, RepetitionPenalty *float32
	TopK                                       *int32
}

func ptr[T any](v T) *T { return &v }

func (s *Server) recordSampling(x Sampling) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sampled) < maxSampled {
		s.sampled = append(s.sampled, x)
	}
}

// Samplings returns the sampling knobs of the Generate RPCs received so far, in arrival
// order (at most the first 4096).
func (s *Server) Samplings() []Sampling {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sampling(nil), s.sampled...)
}
