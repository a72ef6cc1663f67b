"""CrossQ's solver: residual codebooks, context-conditioned beam encoding and
ranking-aligned codebook refinement, in torch.

The code of a token is ``n_stages`` bytes, one codeword index per stage; its
decoded vector is the sum of the chosen codewords (a residual quantiser, as in
Chen et al. 2010 and Martinez et al. 2014). What makes the codes CrossQ's is how
they are chosen and how the codebooks are refined:

* **Context-conditioned encoding.** A token's code minimises a quadratic score
  distortion whose metric depends on the token and on its document,
  ``e' (I + eta_token u u' + eta_context c c') e`` with ``e`` the error, ``u``
  the token's direction and ``c`` its document context (the document's mean
  token, or an attention-weighted mean around the token). Errors along the
  directions that relevant query tokens share with the token and its document
  move MaxSim scores the most, so they cost the most. The context is computed
  from the document's tokens at indexing time and is not stored: decoding reads
  only the codes and the codebooks.
* **Ranking-aligned refinement.** With the codes fixed, the decoded tokens are
  linear in the codebooks, so MaxSim scores are differentiable in them. The
  codebooks are refined by Adam so that, for training queries, the compressed
  scores of each query's exact top candidates keep the exact score distribution
  (a KL divergence between softmaxes) and the exact top document keeps its
  margin over the hard negatives (a hinge), with the reconstruction error as a
  regulariser. The tokens are then encoded again with the refined codebooks.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import math

import numpy as np

from sklearn_ext.utils._torch import import_torch

N_CODEWORDS = 256  # one byte per stage


def segment_starts(groups):
    """Start offsets of the runs of equal values in sorted ``groups`` (numpy)."""
    return np.r_[0, np.flatnonzero(np.diff(groups)) + 1]


def document_context(tokens, group_index, n_groups, *, kind, temperature=0.1):
    """The context vector of every token: unit-norm, from its document's tokens.

    Parameters
    ----------
    tokens : tensor of shape (n, d)
    group_index : long tensor of shape (n,)
        Dense document index (0..n_groups-1) of each token.
    kind : {"mean", "attention"}
        ``"mean"``: the document's mean token. ``"attention"``: the token's own
        softmax(u'v / temperature)-weighted mean of its document's tokens.
    """
    torch = import_torch()
    if kind == "mean":
        sums = torch.zeros(
            n_groups, tokens.shape[1], dtype=tokens.dtype, device=tokens.device
        )
        sums.index_add_(0, group_index, tokens)
        ctx = sums[group_index]
    else:
        ctx = torch.empty_like(tokens)
        order = group_index.cpu().numpy()
        starts = segment_starts(order)
        ends = np.r_[starts[1:], len(order)]
        for s, e in zip(starts.tolist(), ends.tolist()):
            block = tokens[s:e]
            att = torch.softmax(block @ block.T / temperature, dim=1)
            ctx[s:e] = att @ block
    return torch.nn.functional.normalize(ctx, dim=1)


def beam_encode(
    tokens,
    codebooks,
    *,
    directions=(),
    weights=(),
    beam=4,
    chunk=8192,
    return_beam=False,
):
    """Codes minimising ``e'(I + sum_k w_k v_k v_k')e`` by beam search.

    Parameters
    ----------
    tokens : tensor (n, d)
    codebooks : tensor (n_stages, 256, d)
    directions : sequence of tensors (n, d)
        Per-token unit directions ``v_k`` of the metric (the token's own
        direction, its context).
    weights : sequence of float
        The weight ``w_k`` of each direction.
    beam : int
        Partial codes kept per token between stages.

    Returns
    -------
    codes : long tensor (n, n_stages)
    """
    torch = import_torch()
    n_stages = codebooks.shape[0]
    width = beam if return_beam else 1
    out = torch.empty(
        tokens.shape[0], width, n_stages, dtype=torch.long, device=tokens.device
    )
    norms = (codebooks**2).sum(-1)  # (S, 256)
    for s0 in range(0, tokens.shape[0], chunk):
        x = tokens[s0 : s0 + chunk]
        dirs = [v[s0 : s0 + chunk] for v in directions]
        m = x.shape[0]
        resid = x[:, None, :]  # (m, b, d) residual of each beam entry
        # Projections of the residual on each direction, per beam entry.
        proj = [(u * x).sum(1, keepdim=True) for u in dirs]  # (m, 1)
        loss = torch.zeros(m, 1, dtype=x.dtype, device=x.device)
        codes = torch.zeros(m, 1, 0, dtype=torch.long, device=x.device)
        for stage in range(n_stages):
            C = codebooks[stage]
            # ||r - c||^2 - ||r||^2 = -2 r.c + ||c||^2
            delta = -2 * torch.einsum("mbd,kd->mbk", resid, C) + norms[stage]
            new_proj = []
            for (u, w), p in zip(zip(dirs, weights), proj):
                uc = u @ C.T  # (m, 256)
                pk = p[:, :, None] - uc[:, None, :]  # (m, b, 256)
                delta = delta + w * (pk**2 - p[:, :, None] ** 2)
                new_proj.append(pk)
            total = (loss[:, :, None] + delta).reshape(m, -1)
            keep = min(beam, total.shape[1])
            best, flat = torch.topk(total, keep, dim=1, largest=False)
            parent, word = flat // N_CODEWORDS, flat % N_CODEWORDS
            rows = torch.arange(m, device=x.device)[:, None]
            resid = resid[rows, parent] - C[word]
            proj = [pk.reshape(m, -1)[rows, flat] for pk in new_proj]
            codes = torch.cat([codes[rows, parent], word[:, :, None]], dim=2)
            loss = best
        if codes.shape[1] < width:  # fewer partial codes than the beam
            pad = codes[:, -1:].expand(-1, width - codes.shape[1], -1)
            codes = torch.cat([codes, pad], dim=1)
        out[s0 : s0 + chunk] = codes[:, :width]
    return out if return_beam else out[:, 0]


def decode(codes, codebooks):
    """Sum of the chosen codewords: tensor (n, d)."""
    torch = import_torch()
    stages = torch.arange(codebooks.shape[0], device=codes.device)
    return codebooks[stages, codes].sum(1)


def kmeans(x, k, *, n_iter, generator):
    """Plain Lloyd k-means with k-means++ seeding on tensor ``x``."""
    torch = import_torch()
    n = x.shape[0]
    if n <= k:  # every point a codeword; the spare codewords repeat points
        extra = torch.randint(n, (k - n,), generator=generator).to(x.device)
        return torch.cat([x, x[extra]])
    first = torch.randint(n, (1,), generator=generator).item()
    centers = [x[first]]
    d2 = ((x - x[first]) ** 2).sum(1)
    for _ in range(1, k):
        total = d2.sum()
        if not bool(total > 0):  # fewer distinct points than codewords
            probs = torch.ones(n)
        else:
            probs = (d2 / total).cpu()
        i = torch.multinomial(probs, 1, generator=generator).item()
        centers.append(x[i])
        d2 = torch.minimum(d2, ((x - x[i]) ** 2).sum(1))
    C = torch.stack(centers)
    for _ in range(n_iter):
        assign = torch.cdist(x, C).argmin(1)
        sums = torch.zeros_like(C).index_add_(0, assign, x)
        counts = torch.bincount(assign, minlength=k).to(x.dtype)
        empty = counts == 0
        C = torch.where(empty[:, None], C, sums / counts.clamp(min=1)[:, None])
    return C


def init_codebooks(tokens, n_stages, *, n_iter, generator):
    """Greedy residual k-means: each stage clusters the previous residuals."""
    torch = import_torch()
    resid = tokens.clone()
    books = []
    for _ in range(n_stages):
        C = kmeans(resid, N_CODEWORDS, n_iter=n_iter, generator=generator)
        assign = torch.cdist(resid, C).argmin(1)
        resid = resid - C[assign]
        books.append(C)
    return torch.stack(books)


def least_squares_codebooks(tokens, codes, n_stages, ridge=1e-3):
    """Codebooks minimising the total reconstruction error for fixed codes.

    The decoded tokens are ``B @ C`` with ``B`` the (n, n_stages * 256) one-hot
    code matrix, so the codebooks solve ``(B'B + ridge I) C = B' X`` jointly.
    """
    torch = import_torch()
    K = n_stages * N_CODEWORDS
    cols = codes + torch.arange(n_stages, device=codes.device) * N_CODEWORDS
    gram = torch.zeros(K, K, dtype=tokens.dtype, device=tokens.device)
    # B'B: co-occurrence counts of codewords in the same token.
    pair = (cols[:, :, None] * K + cols[:, None, :]).reshape(-1)
    gram.view(-1).index_add_(
        0, pair, torch.ones(pair.shape[0], dtype=tokens.dtype, device=tokens.device)
    )
    rhs = torch.zeros(K, tokens.shape[1], dtype=tokens.dtype, device=tokens.device)
    for s in range(n_stages):
        rhs.index_add_(0, cols[:, s], tokens)
    gram = gram + ridge * max(1.0, tokens.shape[0] / K) * torch.eye(
        K, dtype=tokens.dtype, device=tokens.device
    )
    C = torch.linalg.solve(gram, rhs)
    return C.reshape(n_stages, N_CODEWORDS, -1)


def padded_documents(group_index, n_groups):
    """(n_groups, max_len) token positions per document, -1 where padded."""
    torch = import_torch()
    counts = torch.bincount(group_index, minlength=n_groups)
    max_len = int(counts.max().item())
    order = torch.argsort(group_index, stable=True)
    starts = torch.cumsum(counts, 0) - counts
    rank = (
        torch.arange(len(group_index), device=group_index.device)
        - starts[group_index[order]]
    )
    table = torch.full(
        (n_groups, max_len), -1, dtype=torch.long, device=group_index.device
    )
    table[group_index[order], rank] = order
    return table


def maxsim(query_tokens, query_index, n_queries, doc_tokens, table, chunk=128):
    """Exact MaxSim scores (n_queries, n_docs) of padded documents.

    ``table`` is :func:`padded_documents`' output for the documents scored;
    documents are scored ``chunk`` at a time.
    """
    torch = import_torch()
    out = torch.zeros(
        n_queries, table.shape[0], dtype=doc_tokens.dtype, device=doc_tokens.device
    )
    for d0 in range(0, table.shape[0], chunk):
        rows = table[d0 : d0 + chunk]
        dense = doc_tokens[rows.clamp(min=0)]  # (D, L, d)
        sims = torch.einsum("qd,nld->qnl", query_tokens, dense)
        sims = sims.masked_fill((rows < 0)[None], -math.inf).amax(2)
        out[:, d0 : d0 + chunk].index_add_(0, query_index, sims)
    return out


def rank_refine(
    tokens,
    codes,
    codebooks,
    table,
    queries,
    query_index,
    n_queries,
    *,
    loss="kl_margin",
    n_candidates=16,
    temperature=0.05,
    recon_weight=1.0,
    n_epochs=20,
    lr=1e-3,
    batch_size=32,
    generator=None,
    verbose=0,
):
    """Refine the codebooks (codes fixed) with the ranking-aligned losses.

    For each training query the exact MaxSim scores pick its
    ``n_candidates`` top documents. The loss of a query is, on those
    candidates, the KL divergence of the compressed scores' softmax from the
    exact scores' (``"kl"``: the candidate score distribution) plus the hinge
    ``max(0, margin_exact - margin_compressed)`` of the exact top document over
    every other candidate (``"margin"``: the hard negatives), each score
    divided by the number of query tokens; ``recon_weight`` times the mean
    squared reconstruction error of a random batch of tokens keeps the
    codebooks faithful to tokens the queries do not reach.

    Returns
    -------
    codebooks : tensor, the refined codebooks (detached)
    history : list of float, the mean loss of each epoch
    """
    torch = import_torch()
    n_tok = (
        torch.bincount(query_index, minlength=n_queries).clamp(min=1).to(tokens.dtype)
    )
    with torch.no_grad():
        exact = (
            torch.cat(
                [
                    maxsim(
                        queries[(query_index >= q0) & (query_index < q0 + 64)],
                        query_index[(query_index >= q0) & (query_index < q0 + 64)] - q0,
                        min(64, n_queries - q0),
                        tokens,
                        table,
                    )
                    for q0 in range(0, n_queries, 64)
                ]
            )
            / n_tok[:, None]
        )
        top = torch.topk(exact, min(n_candidates, table.shape[0]), dim=1)
    cand_scores, cand_docs = top.values, top.indices
    qtab = padded_documents(query_index, n_queries)  # (n_queries, max_q_len)
    C = torch.nn.Parameter(codebooks.clone())
    opt = torch.optim.Adam([C], lr=lr)
    history = []
    epochs = range(n_epochs)
    if verbose:
        from tqdm.auto import tqdm

        epochs = tqdm(epochs, desc="CrossQ ranking refinement")
    for _ in epochs:
        perm = torch.randperm(n_queries, generator=generator).to(tokens.device)
        total = 0.0
        for b0 in range(0, n_queries, batch_size):
            qs = perm[b0 : b0 + batch_size]
            qrows = qtab[qs]
            qmask = qrows < 0
            Q = queries[qrows.clamp(min=0)].masked_fill(qmask[..., None], 0.0)
            rows = table[cand_docs[qs]]  # (B, K, L)
            dmask = rows < 0
            dec = decode(codes[rows.clamp(min=0)].reshape(-1, codes.shape[1]), C)
            dec = dec.reshape(*rows.shape, -1)
            sims = torch.einsum("btd,bkld->btkl", Q, dec)
            sims = sims.masked_fill(dmask[:, None], -math.inf).amax(3)
            s = sims.masked_fill(qmask[..., None], 0.0).sum(1) / n_tok[qs, None]
            e = cand_scores[qs]
            term = torch.zeros((), dtype=tokens.dtype, device=tokens.device)
            if loss in ("kl", "kl_margin"):
                p = torch.softmax(e / temperature, 1)
                log_q = torch.log_softmax(s / temperature, 1)
                term = term + (p * (torch.log(p + 1e-12) - log_q)).sum(1).mean()
            if loss in ("margin", "kl_margin"):
                gap_exact = e[:, :1] - e[:, 1:]
                gap = s[:, :1] - s[:, 1:]
                term = term + torch.relu(gap_exact - gap).mean() / temperature
            sample = torch.randint(tokens.shape[0], (4096,), generator=generator)
            sample = sample.to(tokens.device)
            recon = ((decode(codes[sample], C) - tokens[sample]) ** 2).sum(1).mean()
            objective = term + recon_weight * recon
            opt.zero_grad()
            objective.backward()
            opt.step()
            total += float(objective.detach()) * len(qs)
        history.append(total / n_queries)
    return C.detach(), history
