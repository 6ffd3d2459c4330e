"""Glue between TileKernels' kernels and the package's own torch references (tile_kernels/torch/), for
tests/tilekernels/reference.tsv (`tilec_refs.tk.NAME(...)`): the inputs the package's tests make where a kernel has
preconditions a random tensor breaks, and the masking its tests apply to a reference before comparing. The
arithmetic is always the package's: `tk` is its tile_kernels.torch module, passed in by the reference line
(`import tile_kernels.torch as tk_torch` in the setup), so that this module never imports the package (the plan
half runs without it).

gate_inputs: logits and bias for the top-k gates the way tests/moe/test_top2_sum_gate.py's construct_input makes
them: every token's chosen groups and experts apart from the next by more than the kernel's low-precision
arithmetic can swap (the test's 1e-6 between the k-th and (k+1)-th group sums, 2e-6 between neighbouring top
scores; here also between the k-th and (k+1)-th expert, which decides which expert is chosen). The test retries
the whole draw until every token qualifies; at DeepSeek-V3's 4096 tokens one draw never does, so only the
tokens that do not are drawn again.

swiglu_forward_and_per_token_cast: tests/quant/test_swiglu_forward_and_per_token_cast.py's func_ref: the
package's swiglu_forward, the rows of padding (pos_to_expert -1, which the kernel leaves unwritten) zeroed, then
its cast, and those rows' scale factors zeroed as the test does (the side by side starts both outputs at zero).

Needs torch only when called."""

GROUP_GAP = 1e-6        # test_top2_sum_gate: between the k-th and (k+1)-th largest group score
TOPK_GAP = 2e-6         # ... between neighbouring selected scores


def _scores(torch, logits, scoring):
    """The scores the gate ranks by (before the bias), as the test's get_scores."""
    if scoring == "sigmoid":
        return logits.sigmoid()
    if scoring == "softmax":
        return logits.softmax(dim=-1)
    return torch.nn.functional.softplus(logits).sqrt()     # sqrtsoftplus


def gate_unclear(torch, logits, bias, num_groups, num_topk_groups, num_topk, scoring="sigmoid"):
    """Mask of the tokens whose selection a rounding could change (test_top2_sum_gate's conditions)."""
    n, e = logits.shape
    ranked = (logits if scoring == "softmax" else _scores(torch, logits, scoring)) + bias
    bad = torch.zeros(n, dtype=torch.bool, device=logits.device)
    if num_groups != num_topk_groups:
        sums = ranked.view(n, num_groups, e // num_groups).topk(2, dim=-1).values.sum(-1)
        top = sums.sort(dim=-1, descending=True).values
        bad |= ~(top[:, num_topk_groups - 1] - top[:, num_topk_groups] > GROUP_GAP)
        keep = torch.zeros(n, num_groups, dtype=torch.bool, device=logits.device)
        keep.scatter_(1, sums.topk(num_topk_groups, dim=-1).indices, True)
        ranked = ranked.masked_fill(~keep.repeat_interleave(e // num_groups, dim=1), float("-inf"))
    top = ranked.topk(num_topk + 1, dim=-1, sorted=True).values
    bad |= ~(top[:, :num_topk] - top[:, 1:num_topk + 1] > TOPK_GAP).all(dim=-1)
    return bad


def gate_inputs(num_tokens, num_experts, num_groups, num_topk_groups, num_topk, scoring="sigmoid", device="cuda",
                tries=100):
    """(logits [num_tokens, num_experts] float32, bias [num_experts] float32), normal draws, the tokens whose
    choice is unclear (gate_unclear) drawn again until none is."""
    import torch
    logits = torch.randn(num_tokens, num_experts, device=device)
    bias = torch.randn(num_experts, device=device)
    for _ in range(tries):
        bad = gate_unclear(torch, logits, bias, num_groups, num_topk_groups, num_topk, scoring)
        if not bool(bad.any()):
            return logits, bias
        logits[bad] = torch.randn(int(bad.sum()), num_experts, device=device)
    raise RuntimeError("gate_inputs: %d tokens still unclear after %d draws" % (int(bad.sum()), tries))


def swiglu_forward_and_per_token_cast(tk, x, pos_to_token_topk, topk_weights, pos_to_expert, num_per_channels):
    """(out e4m3 [n, hidden], out_sf float32 [n, hidden / num_per_channels]) of the package's references."""
    pad = (pos_to_expert == -1).unsqueeze(-1)
    y = tk.swiglu_forward(x, pos_to_token_topk, topk_weights).masked_fill(pad, 0)
    q, sf = tk.cast(y, "e4m3", (1, num_per_channels))
    return q, sf.masked_fill(pad, 0)


def self_check(torch):
    """gate_unclear flags a token with two equal top scores and one whose k-th and (k+1)-th groups tie."""
    problems = []
    logits = torch.tensor([[0.1, 0.2, 0.3, 0.4], [0.4, 0.4, 0.1, 0.2], [0.1, 0.9, 0.2, 0.3]]).logit()
    bias = torch.zeros(4)
    got = gate_unclear(torch, logits, bias, 2, 2, 2).tolist()
    if got != [False, True, False]:
        problems.append("gate_unclear without groups: %r, want [False, True, False]" % got)
    # groups {0, 1} and {2, 3}: every token's group sums apart (0.3/0.7, 0.8/0.3, 1.0/0.5)
    got = gate_unclear(torch, logits, bias, 2, 1, 1).tolist()
    if got != [False, True, False]:     # token 1's chosen group holds two equal scores
        problems.append("gate_unclear with groups: %r, want [False, True, False]" % got)
    tie = torch.tensor([[0.1, 0.4, 0.2, 0.3]]).logit()
    if gate_unclear(torch, tie, bias, 2, 1, 1).tolist() != [True]:
        problems.append("gate_unclear misses groups whose top-2 sums tie (0.5 and 0.5)")
    logits, bias = gate_inputs(64, 16, 4, 2, 3, device="cpu")
    if bool(gate_unclear(torch, logits, bias, 4, 2, 3).any()):
        problems.append("gate_inputs left an unclear token")
    return problems


def in_place(fn, t, *args):
    """A copy of t after the package's in-place reference fn(copy, *args) (inplace_unique_group_indices)."""
    t = t.clone()
    fn(t, *args)
    return t


def by_output(default, **checks):
    """A check (name, out, ref) that judges the outputs named in checks by theirs and the others by default: the
    package's tests judge one kernel's outputs with different tolerances (swiglu_backward_and_per_token_cast's
    weight gradient by assert_close 1e-4, the rest exactly)."""
    def judge(name, out, ref):
        return checks.get(name, default)(name, out, ref)
    return judge


def cast_transposed(tk, x, num_per_tokens):
    """(out e4m3 [hidden, n], out_sf [n / num_per_tokens, hidden]): the package's per-channel cast, its data
    transposed, as tests/quant/test_per_channel_cast_and_transpose.py compares them."""
    q, sf = tk.cast(x, "e4m3", (num_per_tokens, 1))
    return q.T.contiguous(), sf


def swiglu_forward_cast_transposed(tk, x, num_per_tokens):
    """tests/quant/test_swiglu_forward_and_per_channel_cast_and_transpose.py's func_ref: swiglu_forward rounded to
    bfloat16, then the per-channel cast, transposed."""
    return cast_transposed(tk, tk.swiglu_forward(x).bfloat16(), num_per_tokens)


def e5m6_packed(torch, tk, x, num_per_channels):
    """(packed as the header's uint32 words, scale factors) of the package's cast_to_e5m6 (its uint8 bytes)."""
    q, sf = tk.cast_to_e5m6(x, num_per_channels)
    return q.view(torch.uint32), sf


def swiglu_backward_and_per_token_cast(tk, x, x_sf, grad_out, weight, pos_to_token_topk, token_topk_to_pos,
                                       num_per_channels):
    """(out, x_grad_fp8, x_grad_fp8_sf_invs, x_grad, weight_grad) in the header's order: the func_ref of
    tests/quant/test_swiglu_backward_and_per_token_cast.py (the package's swiglu_backward, its x gradient cast
    per token)."""
    out, x_grad, weight_grad = tk.swiglu_backward((x, x_sf), grad_out, weight, pos_to_token_topk, token_topk_to_pos,
                                                  num_per_channels)
    q, sf = tk.cast(x_grad, "e4m3", (1, num_per_channels))
    return out.to(grad_out.dtype), q, sf, x_grad.to(grad_out.dtype), weight_grad


def grads(torch, fn, inputs, grad_outs, *rest):
    """The gradients of fn(*inputs, *rest) with respect to inputs under grad_outs (one per value fn returns), by
    autograd through the package's reference, as the mHC tests' _tester computes them."""
    leaves = [t.detach().clone().requires_grad_(True) for t in inputs]
    out = fn(*leaves, *rest)
    outs = list(out) if isinstance(out, (tuple, list)) else [out]
    torch.autograd.backward(outs, list(grad_outs))
    return tuple(t.grad for t in leaves)


def over_blocks(check):
    """A check of per-block partial sums ([blocks, ...]) by their total over the blocks, which the wrapper takes
    (mhc_scale_grad_partial.sum(0)): how the work splits over the blocks is the kernel's own."""
    def judge(name, out, ref):
        return check(name + ".sum(0)", out.double().sum(0), ref.double().sum(0))
    return judge


def as_blocks(torch, total, blocks):
    """A [blocks, ...] value whose sum over the blocks is total (over_blocks judges only that)."""
    out = torch.zeros((blocks,) + tuple(total.shape), dtype=total.dtype, device=total.device)
    out[0] = total
    return out


def mhc_post(tk, a, b, c, d):
    """The post kernel's x from its a (comb_res_mix [n, m, m]), b (residual [n, m, h]), c (post_layer_mix [n, m]),
    d (x [n, h]) by tile_kernels.torch.mhc_post_ref on one sequence of n tokens (as mhc_post flattens them)."""
    return tk.mhc_post_ref(d.unsqueeze(0), b.unsqueeze(0), c.unsqueeze(0).unsqueeze(-1), a.unsqueeze(0)).squeeze(0)


def mhc_post_bwd(torch, tk, dx, a, b, c, d):
    """(da, db, dc, dd): the gradients of mhc_post under dx."""
    return grads(torch, lambda a_, b_, c_, d_: mhc_post(tk, a_, b_, c_, d_), (a, b, c, d), (dx,))


def pre_split_mixes(tk, input_mixes, mhc_scale, mhc_base, mult, post_mult, eps):
    """(pre [n, m], post [n, m], comb [n, m * m]) of tile_kernels.torch.mhc_pre_split_mixes_ref on one sequence."""
    pre, post, comb = tk.mhc_pre_split_mixes_ref(input_mixes.unsqueeze(0), mhc_scale, mhc_base, mult, post_mult, eps)
    n = input_mixes.shape[0]
    return pre.reshape(n, mult), post.reshape(n, mult), comb.reshape(n, mult * mult)


def pre_norm_fn_normalise(out_mul, sqrsum, rms_group_size, eps):
    """The last step of tile_kernels.torch.mhc_pre_norm_fn_ref, on the group products out_mul [n, groups, m3] and
    sums of squares sqrsum [n, groups] that the mul kernels make: sum over the groups of out_mul times
    rsqrt(sqrsum / rms_group_size + eps), in float64. The fwd_norm / bwd_norm kernels split that function off."""
    out_mul, sqrsum = out_mul.double(), sqrsum.double()
    return (out_mul * (sqrsum.unsqueeze(-1) / rms_group_size + eps).rsqrt()).sum(-2)


def pre_norm_fn_fwd_norm(out_mul_splitted, sqrsum_splitted, rms_group_size, eps):
    """(out_mul, sqrsum, out): the split-K partial sums added up, then pre_norm_fn_normalise."""
    out_mul, sqrsum = out_mul_splitted.double().sum(0), sqrsum_splitted.double().sum(0)
    return out_mul, sqrsum, pre_norm_fn_normalise(out_mul, sqrsum, rms_group_size, eps)


def pre_norm_fn_bwd_norm(torch, out_grad, out_mul, sqrsum, rms_group_size, eps):
    """(out_mul_grad, sqrsum_grad): autograd of pre_norm_fn_normalise under out_grad, in float64."""
    return grads(torch, lambda m, s: pre_norm_fn_normalise(m, s, rms_group_size, eps),
                 (out_mul.double(), sqrsum.double()), (out_grad.double(),))


def engram_gate_bwd(torch, tk_engram, grad_out, hidden_states, k, v, weight_fused, clamp, eps, blocks):
    """(grad_x, grad_k, grad_v, grad_w_partial): autograd through tile_kernels.torch.engram.engram_gate_ref under
    grad_out, as tests/engram/test_engram_gate_bwd.py, with weight_fused as its hidden weight and ones as its embed
    weight (the reference multiplies the two, the kernel takes the product): the fused weight's gradient is the
    total of the kernel's per-block partials (as_blocks)."""
    ones = torch.ones_like(weight_fused)
    gx, gk, gv, gw = grads(torch, lambda x_, k_, v_, w_: tk_engram.engram_gate_ref(x_, k_, v_, w_, ones, clamp, eps),
                           (hidden_states, k, v, weight_fused), (grad_out,))
    return gx, gk, gv, as_blocks(torch, gw, blocks)


def pre_big_fuse(tk, gemm_out_mul, gemm_out_sqrsum, mhc_scale, mhc_base, residual, rms_group_size, rms_eps, pre_eps,
                 sinkhorn_eps, post_mult, repeat):
    """(post_mix [n, m], comb_mix [n, m * m], layer_input [n, h]): tests/mhc/test_pre_big_fuse.py's
    big_fuse_reference (norm, split mixes, Sinkhorn, apply the pre mix) with the package's torch references in
    place of its kernels, in float64 up to the bf16 layer input: the split-K partials summed and normalised
    (pre_norm_fn_normalise), tile_kernels.torch's mhc_pre_split_mixes_ref, sinkhorn_normalize_ref and
    mhc_pre_apply_mix_ref."""
    n, m = residual.shape[0], residual.shape[1]
    mixes = pre_norm_fn_normalise(gemm_out_mul.double().sum(0).unsqueeze(1), gemm_out_sqrsum.double().sum(0).unsqueeze(1),
                                  rms_group_size, rms_eps)
    pre, post, comb = pre_split_mixes(tk, mixes, mhc_scale.double(), mhc_base.double(), m, post_mult, pre_eps)
    comb = tk.sinkhorn_normalize_ref(comb.view(n, m, m), repeat, sinkhorn_eps).reshape(n, m * m)
    return post, comb, tk.mhc_pre_apply_mix_ref(residual, pre.unsqueeze(-1))
