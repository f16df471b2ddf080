// #attn.plan's own verifier: what a plan says of itself.
// RUN: attn-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{#attn.plan: query_block, heads and key_block must be at least 1}}
func.func @zero_block() attributes {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 0, heads = 1, key_block = 16, splits = 1, cache_block = 0>} { return }

// -----

// expected-error @+1 {{#attn.plan: splits must be at least 0 (0: chosen at run time)}}
func.func @negative_splits() attributes {attn.plan = #attn.plan<schedule = split, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = -1, cache_block = 0>} { return }

// -----

// expected-error @+1 {{#attn.plan: cache_block must be > 0 exactly when keys = paged (got 16)}}
func.func @dense_cache_block() attributes {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 16>} { return }

// -----

// expected-error @+1 {{#attn.plan: cache_block must be > 0 exactly when keys = paged (got 0)}}
func.func @paged_no_cache_block() attributes {attn.plan = #attn.plan<schedule = prefill, keys = paged, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 0>} { return }

// -----

// expected-error @+1 {{#attn.plan: key_block 32 must divide cache_block 16 (a key block never straddles a cache block)}}
func.func @straddles() attributes {attn.plan = #attn.plan<schedule = prefill, keys = paged, query_block = 32, heads = 1, key_block = 32, splits = 1, cache_block = 16>} { return }

// -----

// expected-error @+1 {{#attn.plan: a prefill schedule has splits = 1 (got 4)}}
func.func @split_prefill() attributes {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 32, heads = 1, key_block = 16, splits = 4, cache_block = 0>} { return }

// -----

// expected-error @+1 {{#attn.plan: a decode schedule has splits = 1 (got 0)}}
func.func @split_decode() attributes {attn.plan = #attn.plan<schedule = decode, keys = dense, query_block = 1, heads = 4, key_block = 16, splits = 0, cache_block = 0>} { return }

// -----

// expected-error @+1 {{#attn.plan: a prefill tile holds one head}}
func.func @packed_prefill() attributes {attn.plan = #attn.plan<schedule = prefill, keys = dense, query_block = 32, heads = 2, key_block = 16, splits = 1, cache_block = 0>} { return }

// -----

// expected-error @+2 {{to be one of: prefill, decode, split, combine}}
// expected-error @+1 {{failed to parse Attn_PlanAttr parameter 'schedule'}}
func.func @unknown_schedule() attributes {attn.plan = #attn.plan<schedule = sideways, keys = dense, query_block = 32, heads = 1, key_block = 16, splits = 1, cache_block = 0>} { return }
