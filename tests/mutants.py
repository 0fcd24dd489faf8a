"""Known mistakes, planted one at a time into a copy of solutions/, that the suite must catch and name.

Each mutant replaces one exact piece of text in one solution file (it must occur exactly once). The
suite runs that chapter's tests against the mutated copy and requires (1) that some test fails
and (2) that a failure message says "looks like: <named>", i.e. the mistake is named.
Chapter authors add their chapter's classic mistakes here.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Mutant:
    """One planted mistake."""

    chapter: int
    file: str  # file name in solutions/
    old: str  # exact text in the solution
    new: str  # what the mistake writes instead
    named: str  # words the failure must say after "looks like:"

    @property
    def id(self) -> str:
        """A short name for the test id."""
        return f"ch{self.chapter}-{self.named[:40]}"


MUTANTS = [
    Mutant(1, "chapter01_sequences.py", 'return " ".join(tokens)', 'return "".join(tokens)', "without spaces"),
    Mutant(1, "chapter01_sequences.py", "return 0 if i == j else 1", "return abs(i - j)", "the RNN's distance"),
    Mutant(1, "chapter01_sequences.py", "return n * (n + 1) // 2", "return n * n", "n²"),
    Mutant(2, "chapter02_matrices.py", "dA = dC @ B.T", "dA = dC.T @ B", "transposed gradient"),
    Mutant(2, "chapter02_matrices.py", "dB = A.T @ dC", "dB = dC.T", "transposed gradient"),
    Mutant(2, "chapter02_matrices.py", "grad[idx] = (up - down) / (2 * eps)", "grad[idx] = (up - down) / eps",
           "without the 2"),
    Mutant(2, "chapter02_matrices.py", "    return T\n", "    return A.T\n", "A.T returned as it is (a view)"),
    Mutant(3, "chapter03_embeddings.py", "np.add.at(d_table, arr, d_X)", "d_table[arr] = d_X",
           "overwrites instead of accumulating"),
    Mutant(3, "chapter03_embeddings.py", "return float(a @ b / (na * nb))", "return float(a @ b)",
           "plain dot product"),
    Mutant(4, "chapter04_attention.py", "return S / np.sqrt(d_k)", "return S", "no 1/√d_k scaling"),
    Mutant(4, "chapter04_attention.py", "return S / np.sqrt(d_k)", "return S / d_k", "divided by d_k"),
    Mutant(4, "chapter04_attention.py", "e = np.exp(x - top)", "e = np.exp(x)", "subtract the max"),
    Mutant(4, "chapter04_attention.py", "e / np.sum(e, axis=axis, keepdims=True)", "e / np.sum(e, axis=0, keepdims=True)",
           "wrong axis"),
    Mutant(4, "chapter04_attention.py", "S = np.where(mask, S, -np.inf)", "S = S", "the mask was ignored"),
    Mutant(5, "chapter05_forward_pass.py", "context = output[-1]", "context = output[0]",
           "the context taken from the first position instead of the last"),
    Mutant(5, "chapter05_forward_pass.py", "mask=causal_mask(len(X))", "mask=None", "the causal mask was ignored"),
    Mutant(6, "chapter06_training_step.py", "return param - lr * grad", "return param + lr * grad",
           "update adds the gradient instead of subtracting it"),
    Mutant(6, "chapter06_training_step.py", "dlogits[t] -= 1.0", "dlogits[t] -= 0.0",
           "dL/dlogits without the −1 at the target"),
    Mutant(6, "chapter06_training_step.py", "dWO = np.outer(c, dz)", "dWO = -np.outer(c, dz)", "the sign flipped"),
    Mutant(6, "chapter06_training_step.py", "return param - lr * grad", "return param - grad",
           "the learning rate forgotten"),
    Mutant(7, "chapter07_backprop.py", "d_raw = d_scores / np.sqrt(Q.shape[1])", "d_raw = d_scores",
           "no 1/√d_k in the backward pass"),
    Mutant(7, "chapter07_backprop.py", 't["d_raw_scores"] = t["d_scores"] / np.sqrt(K.shape[1])',
           't["d_raw_scores"] = t["d_scores"]', "no 1/√d_k"),
    Mutant(7, "chapter07_backprop.py", "dW = X.T @ dY", "dW = dY.T @ X", "transposed gradient"),
    Mutant(7, "chapter07_backprop.py", "return dQ, dK_T.T, dV", "return dQ, dK_T, dV", "transposed gradient (dR Q)"),
    Mutant(7, "chapter07_backprop.py", "sgd_step(params[name], grads[name], lr)",
           "sgd_step(params[name], -grads[name], lr)", "the update adds the gradient instead of subtracting it"),
    Mutant(7, "chapter07_backprop.py", 't["d_output"][-1] = t["dcontext"]', 't["d_output"][0] = t["dcontext"]',
           "the gradient went to the first position instead of the last"),
    Mutant(7, "chapter07_backprop.py", "return s * (g - dot)", "return s * g", "the dot was left out"),
    Mutant(8, "chapter08_batch_training.py", "np.mean([g[name] for g in grads], axis=0)",
           "np.sum([g[name] for g in grads], axis=0)", "summed instead of averaged gradients"),
    Mutant(8, "chapter08_batch_training.py", 'return float(np.mean(per_example(examples, params, embeddings=embeddings)["loss"]))',
           'return float(np.sum(per_example(examples, params, embeddings=embeddings)["loss"]))',
           "summed instead of averaged"),
    Mutant(8, "chapter08_batch_training.py", "losses.append(loss)  # the loss before this update",
           "losses.append(batch_loss(examples, apply_gradients(params, grads, lr), embeddings=embeddings))",
           "recorded after each update"),
    Mutant(8, "chapter08_batch_training.py", "params = apply_gradients(params, grads, lr)",
           'params = apply_gradients(params, {"WO": grads["WO"]}, lr)', "only W_O trained"),
    Mutant(8, "chapter08_batch_training.py", "new_params[name] = sgd_step(params[name], g, lr)",
           "new_params[name] = sgd_step(params[name], -np.asarray(g), lr)", "added instead of subtracted"),
    Mutant(9, "chapter09_feed_forward.py", "return np.where(x > 0, d_out, 0.0)", "return d_out",
           "ReLU gradient passed through for negative inputs"),
    Mutant(9, "chapter09_feed_forward.py", "return np.where(x > 0, d_out, 0.0)", "return np.where(x >= 0, d_out, 0.0)",
           "derivative 1 at exactly 0"),
    Mutant(9, "chapter09_feed_forward.py", "dx = dx + np.asarray(d_out, dtype=np.float64)", "dx = dx",
           "the residual path missing from the backward pass"),
    Mutant(9, "chapter09_feed_forward.py", "return x + feed_forward(x, W1, W2, b1, b2)",
           "return feed_forward(x, W1, W2, b1, b2)", "the residual replaced x"),
    Mutant(9, "chapter09_feed_forward.py", "return linear(relu(hidden), W2, b2)", "return linear(hidden, W2, b2)",
           "ReLU not applied"),
    Mutant(9, "chapter09_feed_forward.py", "mask=causal_mask(X.shape[0])", "mask=None",
           "the causal mask was left out"),
    Mutant(10, "chapter10_transformer.py", "var = (xc * xc).sum(axis=-1, keepdims=True) / d",
           "var = (xc * xc).sum(axis=-1, keepdims=True) / (d - 1)", "the sample variance"),
    Mutant(10, "chapter10_transformer.py",
           "log_probs = shifted - np.log(np.sum(np.exp(shifted), axis=-1, keepdims=True))",
           "log_probs = np.log(np.exp(shifted) / np.sum(np.exp(shifted), axis=-1, keepdims=True))",
           "log(softmax(logits))"),
    Mutant(10, "chapter10_transformer.py", "step = lr / len(data)", "step = lr", "summed instead of averaged gradients"),
    Mutant(10, "chapter10_transformer.py", "dx = dx1 + dx_via_norm", "dx = dx_via_norm",
           "the residual path missing from the backward (dx = only"),
    Mutant(10, "chapter10_transformer.py", "dx1 = d_y + dx1_via_norm", "dx1 = dx1_via_norm",
           "the residual path missing from the backward (dx₁ = only"),
    Mutant(10, "chapter10_transformer.py", "np.add.at(d_tok, ids, dx)", "d_tok[ids] = dx",
           "overwrites instead of accumulating"),
    Mutant(10, "chapter10_transformer.py", "S = np.where(causal_mask(len(x)), S, -np.inf)", "S = S",
           "the causal mask was left out: positions read the future"),
    Mutant(10, "chapter10_transformer.py", "return float(loss), d_logits / len(rows)", "return float(loss), d_logits",
           "not divided by the number of targets"),
    Mutant(11, "chapter11_multi_head_attention.py", "return X.reshape(seq, n_heads, d_head).transpose(1, 0, 2).copy()",
           "return X.reshape(n_heads, seq, d_head).copy()", "without the transpose"),
    Mutant(11, "chapter11_multi_head_attention.py", "return H.transpose(1, 0, 2).reshape(seq, n_heads * d_head)",
           "return H.reshape(seq, n_heads * d_head)", "without the transpose"),
    Mutant(11, "chapter11_multi_head_attention.py", "scaled_dot_product_attention(q, k, v, mask=mask) for",
           "scaled_dot_product_attention(q / np.sqrt(len(Qh)), k, v, mask=mask) for", "√d_model"),
    Mutant(11, "chapter11_multi_head_attention.py", "scaled_dot_product_attention(q, k, v, mask=mask) for q, k, v in zip(Qh, Kh, Vh, strict=True)]",
           "scaled_dot_product_attention(q, k, v, mask=mask if h == 0 else None)\n"
           "             for h, (q, k, v) in enumerate(zip(Qh, Kh, Vh, strict=True))]", "the causal mask in head 0 only"),
    Mutant(11, "chapter11_multi_head_attention.py", 'return merged @ W["WO"], (x, W, Qh, Kh, Vh, P, merged)',
           'return merged, (x, W, Qh, Kh, Vh, P, merged)', "W_O forgotten"),
    Mutant(11, "chapter11_multi_head_attention.py", "merged = merge_heads(heads)  # (seq, d_model)",
           'merged = np.vstack([scaled_dot_product_attention(x[c] @ W["WQ"], x[c] @ W["WK"], x[c] @ W["WV"], '
           "mask=causal_mask(len(c)))[0] for c in np.array_split(np.arange(len(x)), n_heads)])",
           "heads split along the sequence axis"),
    Mutant(11, "chapter11_multi_head_attention.py", "d_heads = split_heads(d_merged, n_heads)", "d_heads = split_heads(d_out, n_heads)",
           "W_O forgotten on the way back"),
    Mutant(11, "chapter11_multi_head_attention.py", 'd_merged, dWO = linear_backward(merged, W["WO"], d_out)',
           'd_merged, dWO = linear_backward(merged, W["WO"], d_out)[0], d_out.T @ merged', "transposed"),
    Mutant(11, "chapter11_multi_head_attention.py", 'grads["x"] = dx[0] + dx[1] + dx[2]', 'grads["x"] = dx[2]',
           "only the value path"),
    Mutant(12, "chapter12_rope.py",
           "x0, x1 = X[..., 0::2], X[..., 1::2]  # (..., seq, d/2): features 2i and 2i+1\n    Y = np.empty_like(X)\n"
           "    Y[..., 0::2] = x0 * cos - x1 * sin\n    Y[..., 1::2] = x0 * sin + x1 * cos",
           "h = X.shape[-1] // 2\n    x0, x1 = X[..., :h], X[..., h:]\n    Y = np.empty_like(X)\n"
           "    Y[..., :h] = x0 * cos - x1 * sin\n    Y[..., h:] = x0 * sin + x1 * cos", "the halves pairing convention"),
    Mutant(12, "chapter12_rope.py", "return scaled_dot_product_attention(Qr, Kr, V, mask=causal_mask(len(Q)))",
           "return scaled_dot_product_attention(Qr, Kr, apply_rope(V, base), mask=causal_mask(len(Q)))",
           "V was rotated too"),
    Mutant(12, "chapter12_rope.py", "Y[..., 0::2] = x0 * cos - x1 * sin\n    Y[..., 1::2] = x0 * sin + x1 * cos",
           "Y[..., 0::2] = x0 * cos + x1 * sin\n    Y[..., 1::2] = -x0 * sin + x1 * cos", "the angle's sign flipped"),
    Mutant(12, "chapter12_rope.py", "positions = start + np.arange(seq_len)",
           "positions = start + np.arange(1, seq_len + 1)", "positions counted from 1"),
    Mutant(12, "chapter12_rope.py", "exponent = np.arange(0, d, 2) / d", "exponent = np.arange(0, d, 2) / d / 2",
           "the frequency exponent without its factor 2"),
    Mutant(12, "chapter12_rope.py", "return rotate_pairs(dY, -angles)", "return rotate_pairs(dY, angles)",
           "the forward rotation instead of its inverse"),
    Mutant(13, "chapter13_modern_block.py", "return g * x / _rms(x, eps)",
           "return g * (x - x.mean(axis=-1, keepdims=True)) / _rms(x - x.mean(axis=-1, keepdims=True), eps)",
           "the mean subtracted first"),
    Mutant(13, "chapter13_modern_block.py", "return np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)",
           "return np.sqrt(np.mean(x * x, axis=-1, keepdims=True)) + eps", "ε added outside the square root"),
    Mutant(13, "chapter13_modern_block.py", "dx = (u - x_hat * np.mean(u * x_hat, axis=-1, keepdims=True)) / r",
           "dx = u / r", "only the direct path"),
    Mutant(13, "chapter13_modern_block.py", "return d_out * s * (1.0 + x * (1.0 - s))", "return d_out * s",
           "σ(x) only"),
    Mutant(13, "chapter13_modern_block.py", "h = silu(a) * b", "h = silu(b) * a", "the gate on the wrong branch"),
    Mutant(13, "chapter13_modern_block.py",
           """    h1 = rms_norm(x, params["g1"])  # the attention reads a normalised copy of the stream
    a, attention_cache = rope_multi_head_attention(h1, params, n_heads)
    x1 = x + a  # the stream itself is never normalised
    h2 = rms_norm(x1, params["g2"])
    f, ffn_cache = swiglu(h2, params["W_gate"], params["W_up"], params["W_down"])
    return x1 + f, (params, x, x1, attention_cache, ffn_cache)""",
           """    a, attention_cache = rope_multi_head_attention(x, params, n_heads)
    x1 = rms_norm(x + a, params["g1"])
    f, ffn_cache = swiglu(x1, params["W_gate"], params["W_up"], params["W_down"])
    return rms_norm(x1 + f, params["g2"]), (params, x, x1, attention_cache, ffn_cache)""", "post-norm"),
    Mutant(13, "chapter13_modern_block.py", "dx = dx1 + dx_via_branch", "dx = dx_via_branch",
           "the residual path missing from the backward"),
    Mutant(13, "chapter13_modern_block.py", "dx1 = d_y + dx1_via_branch", "dx1 = dx1_via_branch",
           "the residual path missing from the backward"),
    Mutant(13, "chapter13_modern_block.py", "dQ = merge_heads(rope_backward(np.stack([g[0] for g in per_head]), base))",
           "dQ = merge_heads(np.stack([g[0] for g in per_head]))", "the rotation not undone"),
    # chapter 14: byte-pair encoding
    Mutant(14, "chapter14_bpe.py", "for pair in pairwise(ids):  # every adjacent position, overlapping runs included\n"
           "        counts[pair] = counts.get(pair, 0) + 1",
           "i = 0\n    while i + 1 < len(ids):\n        pair = (ids[i], ids[i + 1])\n"
           "        counts[pair] = counts.get(pair, 0) + 1\n        i += 2 if ids[i] == ids[i + 1] else 1",
           "a run counted without overlap"),
    Mutant(14, "chapter14_bpe.py", "return min(counts, key=lambda pair: (-counts[pair], pair))",
           "return max(counts, key=counts.get)", "ties broken another way"),
    Mutant(14, "chapter14_bpe.py", "return min(counts, key=lambda pair: (-counts[pair], pair))",
           "return max(counts, key=lambda pair: (counts[pair], pair))", "ties broken another way"),
    Mutant(14, "chapter14_bpe.py", "    a, b = pair\n    out = []\n    i = 0\n    while i < len(ids):",
           "    b, a = pair\n    out = []\n    i = 0\n    ids = ids[::-1]\n    while i < len(ids) or (out.reverse() and False):",
           "merged from the right"),
    Mutant(14, "chapter14_bpe.py", "for i in sorted(set(where.pop(pair))):", "for i in sorted(set(where.pop(pair)), reverse=True):",
           "merged from the right"),
    Mutant(14, "chapter14_bpe.py", "vocab[new_id] = vocab[a] + vocab[b]", "vocab[new_id] = vocab[b] + vocab[a]",
           "the right token's bytes put first"),
    Mutant(14, "chapter14_bpe.py", 'return b"".join(parts).decode("utf-8", errors="replace")',
           'return "".join(p.decode("utf-8", errors="replace") for p in parts)', "every token decoded on its own"),
    Mutant(14, "chapter14_bpe.py", "    ids = to_byte_ids(text)\n    rank = {}\n",
           "    ids = to_byte_ids(text)\n    known = {tuple(p): t for p, t in merges}\n    while True:\n"
           "        found = {p: c for p, c in count_pairs(ids).items() if p in known}\n        if not found:\n"
           "            return ids\n        best = most_frequent_pair(found)\n        ids = merge_pair(ids, best, known[best])\n"
           "    rank = {}\n", "merges applied most frequent first"),
    Mutant(14, "chapter14_bpe.py", "    ids = to_byte_ids(text)\n    rank = {}\n",
           "    ids = to_byte_ids(text)\n    for pair, new_id in reversed(merges):\n        ids = merge_pair(ids, pair, new_id)\n"
           "    return ids\n    rank = {}\n", "merges applied from the last learned"),
    Mutant(14, "chapter14_bpe.py", '    return list(text.encode("utf-8"))', "    return [ord(c) for c in text]",
           "code points instead of bytes"),
    Mutant(14, "chapter14_bpe.py", "            i += 2  # past both: the right one cannot start another occurrence",
           "            i += 1", "merged with overlap"),
    Mutant(14, "chapter14_bpe.py", "    for new_id in range(N_BYTES, vocab_size):\n        if not counts:",
           "    for new_id in range(N_BYTES, vocab_size + 1):\n        if not counts:", "one merge too many"),
    # chapter 15: AdamW, the schedule, clipping, checkpoints
    Mutant(15, "chapter15_adamw.py", "m_hat = m / (1 - beta1**t)  # bias correction: both moments started at 0\n"
           "        v_hat = v / (1 - beta2**t)", "m_hat = m\n        v_hat = v", "no bias correction"),
    Mutant(15, "chapter15_adamw.py",  # Adam with L2: the decay goes through m and v, and only there
           "g, m, v = grads[k], np.asarray(state[\"m\"][k]), np.asarray(state[\"v\"][k])\n"
           "        m = beta1 * m + (1 - beta1) * g  # first moment: the gradient's running average\n"
           "        v = beta2 * v + (1 - beta2) * g * g  # second moment: the squared gradient's\n"
           "        m_hat = m / (1 - beta1**t)  # bias correction: both moments started at 0\n"
           "        v_hat = v / (1 - beta2**t)\n"
           "        new_params[k] = w - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * w)",
           "g, m, v = grads[k] + weight_decay * w, np.asarray(state[\"m\"][k]), np.asarray(state[\"v\"][k])\n"
           "        m = beta1 * m + (1 - beta1) * g\n        v = beta2 * v + (1 - beta2) * g * g\n"
           "        m_hat = m / (1 - beta1**t)\n        v_hat = v / (1 - beta2**t)\n"
           "        new_params[k] = w - lr * (m_hat / (np.sqrt(v_hat) + eps))",
           "weight decay added to the gradient"),
    Mutant(15, "chapter15_adamw.py", "new_params[k] = w - lr * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * w)",
           "new_params[k] = w - lr * (m_hat / np.sqrt(v_hat + eps) + weight_decay * w)", "ε inside the square root"),
    Mutant(15, "chapter15_adamw.py", "return float(max_lr * (step + 1) / warmup_steps)",
           "return float(max_lr * step / warmup_steps)", "the schedule off by one step"),
    Mutant(15, "chapter15_adamw.py", "    if step < warmup_steps:", "    if step <= warmup_steps and warmup_steps:",
           "the warm-up one step too long"),
    Mutant(15, "chapter15_adamw.py", "progress = (step - warmup_steps) / (total_steps - warmup_steps)",
           "progress = (step + 1 - warmup_steps) / (total_steps - warmup_steps)", "the decay one step ahead"),
    Mutant(15, "chapter15_adamw.py", "return float(min_lr + 0.5 * (max_lr - min_lr) * (1 + math.cos(math.pi * progress)))",
           "return float(0.5 * max_lr * (1 + math.cos(math.pi * progress)))", "min_lr left out of the cosine"),
    Mutant(15, "chapter15_adamw.py", "return {k: g * scale for k, g in grads.items()}, norm",
           "return {k: g * min(1.0, max_norm / float(np.sqrt(np.sum(g * g)))) for k, g in grads.items()}, norm",
           "each tensor clipped separately"),
    Mutant(15, "chapter15_adamw.py", 'state = {"step": int(data["step"]), "m"', 'state = {"step": 0, "m"',
           "the step count not saved"),
    Mutant(15, "chapter15_adamw.py", 'state = {"step": int(data["step"]), "m": {k: data[f"m/{k}"].astype(np.float64) '
           'for k in names},\n             "v": {k: data[f"v/{k}"].astype(np.float64) for k in names}}',
           'state = {"step": int(data["step"]), "m": {k: np.zeros_like(params[k]) for k in names},\n'
           '             "v": {k: np.zeros_like(params[k]) for k in names}}', "the moments not saved"),
    Mutant(16, "chapter16_sampling.py", "return softmax(z / temperature)", "return softmax(z * temperature)",
           "temperature multiplied instead of divided"),
    Mutant(16, "chapter16_sampling.py", "    return kept / kept.sum()  # renormalise: the kept probabilities sum to 1 again",
           "    return kept", "no renormalisation after filtering"),
    Mutant(16, "chapter16_sampling.py", "n = min(int(np.sum(running < p)) + 1, len(q))",
           "n = max(int(np.sum(running < p)), 1)", "the top-p boundary token dropped"),
    Mutant(16, "chapter16_sampling.py", "    kept[order[:n]] = q[order[:n]]\n    return kept / kept.sum()",
           "    kept[order[:n]] = q[order[:n]]\n    return kept", "no renormalisation after filtering"),
    Mutant(16, "chapter16_sampling.py", 'i = int(np.searchsorted(c, u, side="right"))',
           'i = int(np.searchsorted(c, u, side="left"))', "u ≤ c instead of u < c"),
    Mutant(16, "chapter16_sampling.py", 'order = np.argsort(-p, kind="stable")', "order = np.arange(len(p))",
           "the first k tokens kept"),
    Mutant(16, "chapter16_sampling.py",  # the new query and key both turned as if they were the first positions
           "n_heads), start=t)  # (n_heads, m, d_head), from position t\n"
           "    K_new = apply_rope(split_heads(x @ W[\"WK\"], n_heads), start=t)",
           "n_heads), start=0)  # (n_heads, m, d_head), from position t\n"
           "    K_new = apply_rope(split_heads(x @ W[\"WK\"], n_heads), start=0)", "positions restarted at 0 in the cache"),
    Mutant(16, "chapter16_sampling.py", "K = np.concatenate([K_old, K_new], axis=1)",
           "K = np.concatenate([apply_rope(K_old), K_new], axis=1)", "the cached keys rotated again"),
    Mutant(16, "chapter16_sampling.py", "mask = np.arange(t + m)[None, :] <= t + np.arange(m)[:, None]",
           "mask = np.arange(t + m)[None, :] < t + m + np.zeros((m, 1))", "the new rows not masked among themselves"),
]
