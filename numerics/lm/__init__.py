"""Character-level language models of the suite's architecture, trained on real text (claim E1).

The network is exactly the stack of :mod:`numerics.model.layer` (RMS norm, masked softmax
attention, σ-MLP, slow path over block-pooled tokens with the shifted block-causal mask ``U_c``,
gate ``g``) between a token embedding and a normalised linear head; every gradient is the suite's
analytic VJP, batched and extended to the embedding, the head and the gate.

Modules, bottom to top:

* :mod:`numerics.lm.corpus` — the offline text (CPython's ``pydoc_data.topics``), its
  deterministic normalisation, alphabet, SHA-256, its training, validation and held-out splits
  (held-out and validation deduplicated against training, each split hash-identified); the
  control corpus with strong cross-block structure;
* :mod:`numerics.lm.blockstats` — how much structure neighbouring blocks share (mutual
  information of their character statistics against a shuffled-block baseline);
* :mod:`numerics.lm.params` — the parameters of a language model as one flat dict of arrays;
* :mod:`numerics.lm.batched` — the batched ``(B, T, d)`` forward and reverse sweep of the stack;
* :mod:`numerics.lm.network` — embedding, stack, head, cross-entropy and the full gradient;
* :mod:`numerics.lm.optim` — AdamW, the warm-up/cosine schedule, clipping, and the gate's noise
  band under AdamW;
* :mod:`numerics.lm.train` — the training loop: progress, atomic checkpoints, the run cache,
  and a single training step for timing.
"""
