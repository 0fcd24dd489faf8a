"""What the child process does for a GPT: check, tokenize, train and save; or generate with the KV cache.

Runs inside ``child.child_main`` (your chapters imported there, each call under the watchdog); every event goes to
this process's parent as one JSON line.

Part of ``nox -s train`` (``kata/learner/train/__init__.py`` tells the whole story).
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from .corpus import TrainError, load_corpus
from .gpt_check import check_gpt_gradients
from .gpt_loop import pydoc_text, read_progress, tokenize, train_gpt
from .gpt_model import GptSettings, logits_of, model_arrays, model_from_arrays, nested

CACHE_RTOL, CACHE_ATOL = 1e-6, 1e-8  # the cached rows against the full forward: equal but for rounding (1e-12 here)


def corpus_text(which: str) -> str:
    """The text of ``--corpus``: ``pydoc`` (Python's own documentation), or whatever ``load_corpus`` reads."""
    return pydoc_text() if which == "pydoc" else load_corpus(which).text


def gpt_job(ch, job: dict, send, status: dict) -> None:
    """Do a ``train-gpt`` or ``generate-gpt`` job with your chapters ``ch`` (``ch.c11`` … ``ch.c16``)."""
    if job["mode"] == "generate-gpt":
        status["doing"] = "generating"
        generate_gpt(ch, job, send)
        return
    out = Path(job["out"])
    resume = read_progress(out) if job["resume"] else None
    s = resume["settings"] if resume else GptSettings(**job["settings"])
    status["doing"] = "checking your gradients on a tiny model"
    send({"event": "phase", "what": status["doing"]})
    began = time.perf_counter()
    checked = check_gpt_gradients(ch)
    send({"event": "checked", **checked, "seconds": time.perf_counter() - began})
    status["doing"] = "encoding the corpus with your BPE" if resume else "training your BPE on the corpus"
    send({"event": "phase", "what": status["doing"]})
    tokens = tokenize(ch, corpus_text(s.corpus), s, resume["merges"] if resume else None)
    if resume:
        tokens.bpe_seconds = resume.get("bpe_seconds", 0.0)
    send({"event": "tokenized", "vocab_size": tokens.vocab_size, "bytes_per_token": tokens.bytes_per_token,
          "train_tokens": len(tokens.train), "val_tokens": len(tokens.val), "bpe_seconds": tokens.bpe_seconds,
          "encode_seconds": tokens.encode_seconds, "unigram_entropy": tokens.unigram_entropy(),
          "settings": s.as_dict(), "start_step": resume["step"] if resume else 0})
    status["doing"] = "training"

    def report(event: dict) -> None:
        if event["event"] == "step":
            status["doing"] = f"training (step {event['step'] + 1})"
        send(event)

    run = train_gpt(ch, s, tokens, out, report, resume, job.get("stop_at"))
    np.savez(out / "model.npz", **model_arrays(nested(run["params"]), s, tokens.merges))
    send({"event": "done", **{k: run[k] for k in ("evals", "train_seconds", "stopped", "session_seconds",
                                                  "session_tokens")},
          **({"schedule": run["schedule"], "attention_tokens": run["attention_tokens"],
              "attention": [m.tolist() for m in run["attention"]]} if not run["stopped"] else {}),
          "cpu_seconds": time.process_time()})


def _check_cache(ch, model: dict, n_heads: int, ids: list[int], prefill: np.ndarray, decoded: np.ndarray) -> None:
    """The prefill's rows and the first decoded row against your chapter 13's full forward; TrainError if not."""
    full = logits_of(ch, np.array(ids), model, n_heads)
    for what, got, want in (("the prompt's rows (the prefill, caches=None)", prefill, full[:-1]),
                            (f"the first token decoded from the caches (position {len(ids) - 1})", decoded, full[-1:])):
        if np.shape(got) != np.shape(want) or not np.allclose(got, want, rtol=CACHE_RTOL, atol=CACHE_ATOL):
            gap = float(np.max(np.abs(got - want))) if np.shape(got) == np.shape(want) else float("nan")
            raise TrainError(
                f"your KV cache disagrees with the full forward: gpt_forward's logits of {what} differ from those of "
                f"chapter 13's prenorm_block over the whole sequence with no cache (largest difference {gap:.3g}, "
                f"shape {np.shape(got)} against {np.shape(want)}). The text would be the wrong model's: "
                "`nox -s chapter16` names the mistake (positions restarted at 0, the cached keys rotated again or "
                "stored unrotated, the new rows not masked among themselves).")


def generate_gpt(ch, job: dict, send) -> None:
    """Continue a prompt with your chapter 16: one prefill, then one token at a time from the KV cache.

    Each token is your ``choose_next`` on the last row of logits with a uniform draw ``u`` from a generator
    seeded with ``--seed``. The model was trained on windows of ``context`` tokens; when the cache holds that
    many, the last half of them is fed again as a new prompt (positions from 0), so the model never sees a
    position it was not trained on. At the first token decoded from the caches the prefill's rows and that
    token's row are compared with the full forward of your chapter 13 (``prenorm_block`` over the whole
    sequence, no cache): a KV cache that disagrees stops the run, as a wrong gradient stops training.
    """
    with np.load(job["model"], allow_pickle=False) as npz:
        arrays = dict(npz)
    model, merges, n_heads, context = model_from_arrays(arrays)
    vocab = ch.c14.build_vocab(merges)
    prompt = [int(i) for i in ch.c14.encode(job["prompt"], merges)][-context:]
    if not prompt:
        raise TrainError("--prompt is empty: give at least one character to continue")
    rng = np.random.default_rng(job["seed"])
    ids = list(prompt)
    logits, caches = ch.c16.gpt_forward(np.array(prompt), model, n_heads, None)
    prefill, checked = np.asarray(logits, dtype=np.float64), False  # the latest prefill's rows, for the check
    held = len(prompt)
    for _ in range(job["n"]):
        row = np.asarray(logits, dtype=np.float64)[-1]
        nxt = int(ch.c16.choose_next(row, float(rng.random()), temperature=job["temperature"], top_k=job["top_k"],
                                     top_p=job["top_p"]))
        if not 0 <= nxt < len(vocab):
            raise TrainError(f"choose_next returned {nxt}, not an id from 0 to {len(vocab) - 1}")
        ids.append(nxt)
        send({"event": "token", "id": nxt, "bytes": list(vocab[nxt])})
        if held >= context:
            window = ids[-(context // 2):]
            logits, caches = ch.c16.gpt_forward(np.array(window), model, n_heads, None)
            held = len(window)
            prefill = np.asarray(logits, dtype=np.float64)
        else:
            logits, caches = ch.c16.gpt_forward(np.array([nxt]), model, n_heads, caches)
            held += 1
            if not checked:  # the caches hold the prefill's tokens and this one: ids[-held:]
                _check_cache(ch, model, n_heads, ids[-held:], prefill, np.asarray(logits, dtype=np.float64))
                checked = True
    send({"event": "done", "text": ch.c14.decode(ids, vocab), "prompt_tokens": len(prompt)})
