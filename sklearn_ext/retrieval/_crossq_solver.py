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
    w = torch.tensor(list(weights), dtype=tokens.dtype, device=tokens.device)
    for s0 in range(0, tokens.shape[0], chunk):
        x = tokens[s0 : s0 + chunk]
        m = x.shape[0]
        rows = torch.arange(m, device=x.device)[:, None]
        # V: the metric's directions (m, k, d); P: the projections of each
        # beam entry's residual on them (m, b, k).
        V = torch.stack([v[s0 : s0 + chunk] for v in directions], 1) if len(w) else None
        P = (V @ x[:, :, None]).transpose(1, 2) if V is not None else None
        loss = torch.zeros(m, 1, dtype=x.dtype, device=x.device)
        codes = torch.zeros(m, 1, 0, dtype=torch.long, device=x.device)
        for stage in range(n_stages):
            C = codebooks[stage]
            # The change of the loss by codeword c, for a beam entry with
            # residual r = x - sum_j C_j[code_j] and projections p = V r:
            #   ||r - c||^2 - ||r||^2 + sum_k w_k ((p_k - v_k.c)^2 - p_k^2)
            # = ||c||^2 - 2 x.c + 2 sum_j C_j[code_j].c
            #   + sum_k w_k (v_k.c)^2 - 2 sum_k w_k p_k v_k.c,
            # read through lookup tables: x.c and v_k.c once per token, the
            # codewords' cross products once per stage (faiss's residual
            # quantiser uses the same tables), the beam's own terms last.
            shared = norms[stage] - 2 * (x @ C.T)  # (m, 256)
            if V is not None:
                VC = V @ C.T  # (m, k, 256)
                shared = shared + (w[:, None] * VC**2).sum(1)
            total = loss[:, :, None] + shared[:, None, :]  # (m, b, 256)
            if stage:
                cross = codebooks[:stage].reshape(-1, C.shape[1]) @ C.T
                offset = torch.arange(stage, device=x.device) * N_CODEWORDS
                total = total + 2 * cross[codes + offset].sum(2)
            if V is not None:
                total = torch.baddbmm(total, P * (-2 * w), VC)
            total = total.reshape(m, -1)
            keep = min(beam, total.shape[1])
            best, flat = torch.topk(total, keep, dim=1, largest=False)
            parent, word = flat // N_CODEWORDS, flat % N_CODEWORDS
            if V is not None:
                chosen = VC.gather(2, word[:, None, :].expand(-1, VC.shape[1], -1))
                P = P[rows, parent] - chosen.transpose(1, 2)
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


def metric_apply(errors, directions=(), weights=()):
    """``M e`` for each row: ``e + sum_k w_k (v_k . e) v_k`` (the score metric)."""
    out = errors
    for v, w in zip(directions, weights):
        out = out + w * (v * errors).sum(1, keepdim=True) * v
    return out


def least_squares_codebooks(
    tokens,
    codes,
    n_stages,
    ridge=1e-3,
    *,
    directions=(),
    weights=(),
    max_cg=30,
    tol=1e-4,
):
    """Codebooks minimising the total (score-metric) error for fixed codes.

    The decoded tokens are ``B @ C`` with ``B`` the (n, n_stages * 256) one-hot
    code matrix. Without ``directions`` the codebooks solve
    ``(B'B + ridge I) C = B' X`` jointly. With them, each token's error is
    measured in its own metric ``M_i = I + sum_k w_k v_ik v_ik'`` (the same
    metric the codes are chosen in), and the codebooks solve the normal
    equations ``sum_i b_i b_i' C M_i + ridge C = sum_i b_i x_i' M_i`` by
    conjugate gradients preconditioned with ``B'B + ridge I``: since
    ``I <= M_i <= (1 + sum_k w_k) I`` the preconditioned system is well
    conditioned, and the plain solution is the starting point.
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
    lam = ridge * max(1.0, tokens.shape[0] / K)
    gram = gram + lam * torch.eye(K, dtype=tokens.dtype, device=tokens.device)

    def scatter(rows):  # B' rows: (K, d)
        out = torch.zeros(K, rows.shape[1], dtype=rows.dtype, device=rows.device)
        for s in range(n_stages):
            out.index_add_(0, cols[:, s], rows)
        return out

    factor = torch.linalg.cholesky(gram)
    C = torch.cholesky_solve(scatter(tokens), factor)
    if not len(directions):
        return C.reshape(n_stages, N_CODEWORDS, -1)

    def normal(C):  # (sum_i b_i b_i' C M_i + lam C)
        decoded = C[cols[:, 0]]
        for s in range(1, n_stages):
            decoded += C[cols[:, s]]
        return scatter(metric_apply(decoded, directions, weights)) + lam * C

    rhs = scatter(metric_apply(tokens, directions, weights))
    r = rhs - normal(C)
    z = torch.cholesky_solve(r, factor)
    p = z
    rz = (r * z).sum()
    scale = rhs.norm().clamp_min(1e-30)
    for _ in range(max_cg):
        if float(r.norm() / scale) < tol:
            break
        Ap = normal(p)
        alpha = rz / (p * Ap).sum().clamp_min(1e-30)
        C = C + alpha * p
        r = r - alpha * Ap
        z = torch.cholesky_solve(r, factor)
        rz_new = (r * z).sum()
        p = z + (rz_new / rz.clamp_min(1e-30)) * p
        rz = rz_new
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
    directions=(),
    weights=(),
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
    reconstruction error of a random batch of tokens, measured in each
    token's score metric (``directions`` and ``weights``, as in
    :func:`beam_encode`: the token's direction and its document context),
    keeps the codebooks faithful to tokens the queries do not reach.

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
    stage_offset = torch.arange(codes.shape[1], device=codes.device) * N_CODEWORDS
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
            # Padding trimmed to the batch's longest query and candidate.
            qrows = qtab[qs]
            qrows = qrows[:, : int((qrows >= 0).sum(1).max())]
            qmask = qrows < 0
            Q = queries[qrows.clamp(min=0)].masked_fill(qmask[..., None], 0.0)
            rows = table[cand_docs[qs]]  # (B, K, L)
            rows = rows[..., : int((rows >= 0).sum(-1).max())]
            dmask = rows < 0
            # Compressed scores through lookup tables q . codeword (B, t,
            # stages * 256), summed over each token's codewords: the decoded
            # tokens are never formed.
            n_b, n_t = Q.shape[:2]
            lut = torch.einsum("btd,skd->btsk", Q, C).reshape(n_b, n_t, -1)
            words = codes[rows.clamp(min=0)] + stage_offset  # (B, K, L, S)
            sims = (
                torch.gather(lut, 2, words.reshape(n_b, 1, -1).expand(n_b, n_t, -1))
                .reshape(n_b, n_t, *words.shape[1:])
                .sum(-1)
            )
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
            err = decode(codes[sample], C) - tokens[sample]
            dirs = [v[sample] for v in directions]
            recon = (err * metric_apply(err, dirs, weights)).sum(1).mean()
            objective = term + recon_weight * recon
            opt.zero_grad()
            objective.backward()
            opt.step()
            total += float(objective.detach()) * len(qs)
        history.append(total / n_queries)
    return C.detach(), history
