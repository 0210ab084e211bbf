package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"
	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

// The tenant budget scripts keep one hash per tenant, key <prefix>tenant:{<name>} (the name
// is the Cluster hash tag: one slot per tenant, every script touches that key alone).
// Fields: r, p, o = the requests, prompt-token and output-token bucket levels (charged and
// not yet refilled), ts = when they were last brought up to date (server ms, TIME), and one
// field c:<reservation id> = expiry ms per request in flight. Each bucket drains at
// limit/60000 per ms; an unlimited dimension is not kept. Expired reservation entries are
// dropped by every reserve, so a replica killed mid-request leaks its entry no longer than
// its TTL; the whole hash expires once its buckets would be empty and its entries gone.

// budgetDrain is the shared prologue: now, and the levels drained to now with the limits
// ARGV[1..3] (requests, prompt, output per minute).
const budgetDrain = nowMS + `
local lim = {tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])}
local f = {'r', 'p', 'o'}
local h = redis.call('HMGET', KEYS[1], 'r', 'p', 'o', 'ts')
local el = math.max(0, now - (tonumber(h[4]) or now))
local lv = {}
for i = 1, 3 do
  local v = tonumber(h[i]) or 0
  if lim[i] > 0 then lv[i] = math.max(0, v - el * lim[i] / 60000) else lv[i] = 0 end
end
`

// budgetKeep stores the levels and sets the hash's expiry: the time its fullest bucket
// needs to drain (a minute at most) or its longest entry, whichever is later.
const budgetKeep = `
redis.call('HSET', KEYS[1], 'r', tostring(lv[1]), 'p', tostring(lv[2]), 'o', tostring(lv[3]), 'ts', tostring(now))
local keep = 1000
for i = 1, 3 do if lim[i] > 0 and lv[i] > 0 then keep = math.max(keep, math.ceil(lv[i] * 60000 / lim[i]) + 1000) end end
if keep > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], keep) end
`

// reserveScript: ARGV rpm, ppm, opm, max concurrent, est prompt, est output, ttl ms, id.
// Returns {1, 0, 0} when charged, else {0, limit index (1 requests, 2 prompt, 3 output,
// 4 concurrent), retry ms}.
var reserveScript = goredis.NewScript(budgetDrain + `
local maxc, ttl = tonumber(ARGV[4]), tonumber(ARGV[7])
local live, soonest = 0, nil
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'c:' then
    local exp = tonumber(all[i + 1])
    if exp <= now then redis.call('HDEL', KEYS[1], all[i])
    else
      live = live + 1
      if soonest == nil or exp < soonest then soonest = exp end
    end
  end
end
if maxc > 0 and live + 1 > maxc then return {0, 4, soonest - now} end
local need = {1, tonumber(ARGV[5]), tonumber(ARGV[6])}
for i = 1, 3 do
  if lim[i] > 0 and lv[i] + need[i] > lim[i] then
    return {0, i, math.ceil((lv[i] + need[i] - lim[i]) * 60000 / lim[i])}
  end
end
for i = 1, 3 do if lim[i] > 0 then lv[i] = lv[i] + need[i] end end
redis.call('HSET', KEYS[1], 'c:' .. ARGV[8], string.format('%d', now + ttl))
` + budgetKeep + `
if ttl > redis.call('PTTL', KEYS[1]) then redis.call('PEXPIRE', KEYS[1], ttl) end
return {1, 0, 0}
`)

// settleScript: ARGV rpm, ppm, opm, reserved prompt, reserved output, used prompt, used
// output, id. Frees the entry and, when it was held, moves the buckets by used - reserved.
// Returns 1 when the entry was held.
var settleScript = goredis.NewScript(budgetDrain + `
if redis.call('HDEL', KEYS[1], 'c:' .. ARGV[8]) == 0 then return 0 end
local d = {0, tonumber(ARGV[6]) - tonumber(ARGV[4]), tonumber(ARGV[7]) - tonumber(ARGV[5])}
for i = 2, 3 do if lim[i] > 0 then lv[i] = math.max(0, lv[i] + d[i]) end end
` + budgetKeep + `
return 1
`)

// usageScript: ARGV rpm, ppm, opm. Returns {r, p, o (as strings), live entries}.
var usageScript = goredis.NewScript(budgetDrain + `
local live = 0
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if string.sub(all[i], 1, 2) == 'c:' and tonumber(all[i + 1]) > now then live = live + 1 end
end
return {tostring(lv[1]), tostring(lv[2]), tostring(lv[3]), live}
`)

// budgetLimits are the limit names by script index (1-based).
var budgetLimits = [...]string{"", "requests_per_minute", "prompt_tokens_per_minute", "output_tokens_per_minute", "max_concurrent_requests"}

// TenantBudgets is the Redis ports.TenantBudgets: every replica on the same Redis and
// prefix shares each tenant's buckets. Each call is one Lua script on one key (Cluster
// safe), bounded by OpTimeout.
type TenantBudgets struct {
	c goredis.UniversalClient
	o Options
}

// NewTenantBudgets returns the Redis TenantBudgets on client c.
func NewTenantBudgets(c goredis.UniversalClient, o Options) *TenantBudgets {
	return &TenantBudgets{c: c, o: o.withDefaults()}
}

// TenantKey is the Redis key of tenant name's budgets under prefix.
func TenantKey(prefix, name string) string { return prefix + "tenant:{" + name + "}" }

func limitArgs(l tenant.Limits) []any {
	return []any{l.RequestsPerMinute, l.PromptTokensPerMinute, l.OutputTokensPerMinute}
}

// Reserve implements ports.TenantBudgets in one round trip. Errors: Redis failures and
// timeouts (wrapped).
func (b *TenantBudgets) Reserve(ctx context.Context, t tenant.Tenant, est ports.TokenUse, ttl time.Duration) (ports.Reservation, *ports.BudgetDenial, error) {
	est = CapEstimate(t.Limits, est)
	ctx, cancel := context.WithTimeout(ctx, b.o.OpTimeout)
	defer cancel()
	id := uuid.NewString()
	args := append(limitArgs(t.Limits), t.Limits.MaxConcurrentRequests, est.Prompt, est.Output, ttl.Milliseconds(), id)
	res, err := reserveScript.Run(ctx, b.c, []string{TenantKey(b.o.Prefix, t.Name)}, args...).Int64Slice()
	if err != nil {
		return ports.Reservation{}, nil, fmt.Errorf("redis tenant budgets: reserve for %s: %w", t.Name, err)
	}
	if len(res) != 3 || res[1] < 0 || res[1] >= int64(len(budgetLimits)) {
		return ports.Reservation{}, nil, fmt.Errorf("redis tenant budgets: reserve for %s: unexpected reply %v", t.Name, res)
	}
	if res[0] != 1 {
		return ports.Reservation{}, denial(t.Limits, int(res[1]), time.Duration(res[2])*time.Millisecond), nil
	}
	return ports.Reservation{Tenant: t, ID: id, Reserved: est, TTL: ttl}, nil, nil
}

// Settle implements ports.TenantBudgets in one round trip. Errors: Redis failures (the
// entry then expires within its TTL; the buckets refill on their own).
func (b *TenantBudgets) Settle(ctx context.Context, r ports.Reservation, used ports.TokenUse) error {
	if r.ID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, b.o.OpTimeout)
	defer cancel()
	args := append(limitArgs(r.Tenant.Limits), r.Reserved.Prompt, r.Reserved.Output, used.Prompt, used.Output, r.ID)
	if err := settleScript.Run(ctx, b.c, []string{TenantKey(b.o.Prefix, r.Tenant.Name)}, args...).Err(); err != nil {
		return fmt.Errorf("redis tenant budgets: settle for %s: %w", r.Tenant.Name, err)
	}
	return nil
}

// Usage implements ports.TenantBudgets.
func (b *TenantBudgets) Usage(ctx context.Context, t tenant.Tenant) (ports.BudgetUsage, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.OpTimeout)
	defer cancel()
	res, err := usageScript.Run(ctx, b.c, []string{TenantKey(b.o.Prefix, t.Name)}, limitArgs(t.Limits)...).Slice()
	if err != nil && !errors.Is(err, goredis.Nil) {
		return ports.BudgetUsage{}, fmt.Errorf("redis tenant budgets: usage of %s: %w", t.Name, err)
	}
	if len(res) != 4 {
		return ports.BudgetUsage{}, fmt.Errorf("redis tenant budgets: usage of %s: unexpected reply %v", t.Name, res)
	}
	num := func(v any) float64 { s, _ := v.(string); f, _ := strconv.ParseFloat(s, 64); return f }
	live, _ := res[3].(int64)
	return ports.BudgetUsage{Requests: num(res[0]), PromptTokens: num(res[1]), OutputTokens: num(res[2]), Concurrent: live}, nil
}

// CapEstimate caps each part of est at its per-minute limit (when limited): a request
// larger than the whole budget is admitted into an empty bucket rather than never.
func CapEstimate(l tenant.Limits, est ports.TokenUse) ports.TokenUse {
	if l.PromptTokensPerMinute > 0 && est.Prompt > l.PromptTokensPerMinute {
		est.Prompt = l.PromptTokensPerMinute
	}
	if l.OutputTokensPerMinute > 0 && est.Output > l.OutputTokensPerMinute {
		est.Output = l.OutputTokensPerMinute
	}
	return est
}

// denial builds the BudgetDenial for limit index i (1 requests, 2 prompt, 3 output, 4
// concurrent) of l, retrying after at least a second.
func denial(l tenant.Limits, i int, after time.Duration) *ports.BudgetDenial {
	vals := [...]int64{0, l.RequestsPerMinute, l.PromptTokensPerMinute, l.OutputTokensPerMinute, l.MaxConcurrentRequests}
	if after < time.Second {
		after = time.Second
	}
	return &ports.BudgetDenial{Limit: budgetLimits[i], Value: vals[i], RetryAfter: after}
}

var _ ports.TenantBudgets = (*TenantBudgets)(nil)
