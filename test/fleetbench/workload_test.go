package fleetbench_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleetbench"
)

func gen(t *testing.T, name string, n int) []fleetbench.Request {
	t.Helper()
	rs, err := fleetbench.Generate(name, 42, n, fleetbench.DefaultShape())
	require.NoError(t, err)
	require.Len(t, rs, n)
	return rs
}

func TestSharedPrefixSharesFewLongPrefixes(t *testing.T) {
	t.Parallel()
	s := fleetbench.DefaultShape()
	rs := gen(t, fleetbench.SharedPrefix, 200)
	byPrefix := map[string]int{}
	users := map[string]bool{}
	suffixes := map[string]bool{}
	for _, r := range rs {
		require.Len(t, r.Messages, 2)
		require.Equal(t, "system", r.Messages[0].Role)
		assert.Len(t, strings.Fields(r.Messages[0].Content), s.PrefixWords)
		byPrefix[r.Messages[0].Content]++
		users[r.Key] = true
		suffixes[r.Messages[1].Content] = true
		assert.LessOrEqual(t, len(strings.Fields(r.Messages[1].Content)), s.SuffixMax)
		assert.Equal(t, -1, r.After)
	}
	assert.LessOrEqual(t, len(byPrefix), s.Prefixes, "a few prefixes")
	assert.GreaterOrEqual(t, len(byPrefix), s.Prefixes/2)
	for _, n := range byPrefix {
		assert.Greater(t, n, 1, "every prefix is shared by several requests")
	}
	assert.Greater(t, len(users), 50, "many users")
	assert.Len(t, suffixes, len(rs), "suffixes are unique")
}

// prefixOf reports whether a is a prefix of b, message by message.
func prefixOf(a, b []fleetbench.Message) bool {
	return len(a) <= len(b) && slices.Equal(a, b[:len(a)])
}

func TestMultiTurnHistoriesGrowAndExtendThePreviousTurn(t *testing.T) {
	t.Parallel()
	rs := gen(t, fleetbench.MultiTurn, 300)
	followUps := 0
	for i, r := range rs {
		require.Equal(t, "user", r.Messages[len(r.Messages)-1].Role)
		if r.After < 0 {
			assert.Len(t, r.Messages, 2, "a first turn: system prompt and one user message")
			continue
		}
		followUps++
		require.Less(t, r.After, i)
		prev := rs[r.After]
		assert.Equal(t, prev.Key, r.Key, "same session")
		assert.True(t, prefixOf(prev.Messages, r.Messages), "turn %d re-sends the history of turn %d", i, r.After)
		require.Len(t, r.Messages, len(prev.Messages)+2, "plus the previous answer and a new user message")
		assert.Equal(t, "assistant", r.Messages[len(prev.Messages)].Role)
		assert.Greater(t, r.Words(), prev.Words())
	}
	assert.Greater(t, followUps, 150, "most requests continue a session")
	assert.Equal(t, rs[0].Messages[0], rs[len(rs)-1].Messages[0], "the system prompt is shared by every session")
}

func TestAgenticReusesTensOfThousandsOfTokens(t *testing.T) {
	t.Parallel()
	s := fleetbench.DefaultShape()
	rs := gen(t, fleetbench.Agentic, 60)
	contexts := map[string]bool{}
	longest := 0
	for i, r := range rs {
		contexts[r.Messages[0].Content] = true
		assert.GreaterOrEqual(t, r.Words(), s.ContextWords)
		longest = max(longest, r.Words())
		if r.After >= 0 {
			prev := rs[r.After]
			if len(r.Messages) > 2 {
				assert.True(t, prefixOf(prev.Messages, r.Messages), "step %d extends step %d", i, r.After)
			} else {
				assert.Equal(t, prev.Messages[0], r.Messages[0], "a new task reuses the agent's context")
			}
		}
	}
	assert.Len(t, contexts, s.Agents, "one context per agent, reused by every call")
	assert.Greater(t, longest, 20000, "tens of thousands of tokens")
}

func TestUniquePromptsShareNothing(t *testing.T) {
	t.Parallel()
	firsts := map[string]bool{}
	for _, r := range gen(t, fleetbench.Unique, 200) {
		require.Len(t, r.Messages, 1)
		firsts[strings.Fields(r.Messages[0].Content)[0]] = true
	}
	assert.Len(t, firsts, 200, "every prompt differs from its first token")
}

func TestMixedHasShortAndLongPrompts(t *testing.T) {
	t.Parallel()
	s := fleetbench.DefaultShape()
	short, long := 0, 0
	docs := map[string]int{}
	for _, r := range gen(t, fleetbench.Mixed, 400) {
		if r.Words() > s.DocWords {
			long++
			docs[r.Messages[0].Content]++
		} else {
			assert.LessOrEqual(t, r.Words(), s.ShortMax+1)
			short++
		}
	}
	assert.InDelta(t, 0.25, float64(long)/400, 0.07)
	assert.Greater(t, short, long)
	assert.LessOrEqual(t, len(docs), s.Docs)
}

func TestWorkloadsAreDeterministicPerSeed(t *testing.T) {
	t.Parallel()
	for _, name := range fleetbench.WorkloadNames() {
		a, err := fleetbench.Generate(name, 3, 30, fleetbench.DefaultShape())
		require.NoError(t, err)
		b, err := fleetbench.Generate(name, 3, 30, fleetbench.DefaultShape())
		require.NoError(t, err)
		c, err := fleetbench.Generate(name, 4, 30, fleetbench.DefaultShape())
		require.NoError(t, err)
		assert.Equal(t, a, b, name)
		assert.NotEqual(t, a, c, name)
	}
}

func TestParseWorkloads(t *testing.T) {
	t.Parallel()
	got, err := fleetbench.ParseWorkloads("multi-turn, shared-prefix,multi-turn")
	require.NoError(t, err)
	assert.Equal(t, []string{"multi-turn", "shared-prefix"}, got)
	got, err = fleetbench.ParseWorkloads("all")
	require.NoError(t, err)
	assert.Equal(t, fleetbench.WorkloadNames(), got)
	_, err = fleetbench.ParseWorkloads("shared")
	assert.ErrorContains(t, err, `unknown workload "shared"`)
	_, err = fleetbench.Generate("nope", 1, 1, fleetbench.DefaultShape())
	assert.Error(t, err)
	_, err = fleetbench.Generate(fleetbench.Unique, 1, 0, fleetbench.DefaultShape())
	assert.Error(t, err)
}

func TestParsePoliciesAndReplicas(t *testing.T) {
	t.Parallel()
	p, err := fleetbench.ParsePolicies("cache_aware,round_robin")
	require.NoError(t, err)
	assert.Equal(t, []string{"cache_aware", "round_robin"}, p)
	all, err := fleetbench.ParsePolicies("all")
	require.NoError(t, err)
	assert.Contains(t, all, "consistent_hashing")
	_, err = fleetbench.ParsePolicies("fastest")
	assert.ErrorContains(t, err, "unknown policy")
	r, err := fleetbench.ParseReplicas("1, 4")
	require.NoError(t, err)
	assert.Equal(t, []int{1, 4}, r)
	for _, bad := range []string{"0", "x", ""} {
		_, err := fleetbench.ParseReplicas(bad)
		assert.Error(t, err, bad)
	}
}
