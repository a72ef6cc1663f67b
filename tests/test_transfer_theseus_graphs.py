"""Theseus beyond chains: convolutions, skip connections, norms, functional models."""

import copy
import functools
import warnings

import numpy as np
import pytest
import torch
from test_transfer_theseus import _out, _perturbed
from torch import nn

from sklearn_ext.transfer import FunctionalModel, TaskVectorTransporter, task_vector


class CNN(nn.Module):
    def __init__(self, c1=6, c2=8, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.conv1 = nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = nn.Conv2d(c1, c2, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(c2 * 4 * 4, 3)

    def forward(self, x):
        h = torch.relu(self.conv1(x.reshape(-1, 1, 8, 8)))
        h = self.pool(torch.relu(self.conv2(h)))
        return self.fc(torch.flatten(h, 1))


class Residual(nn.Module):
    """A residual stream of width d with one block (hidden width k)."""

    def __init__(self, d=12, k=16, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.inp = nn.Linear(6, d)
        self.up = nn.Linear(d, k)
        self.down = nn.Linear(k, d)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, 3)

    def forward(self, x):
        h = self.inp(x)
        h = h + self.down(torch.relu(self.up(h)))
        return self.head(self.norm(h))


@pytest.fixture
def images():
    return np.random.default_rng(0).normal(size=(60, 64))


@pytest.fixture
def rows():
    return np.random.default_rng(0).normal(size=(300, 6))


def _permuted_cnn(net, p1, p2):
    twin = copy.deepcopy(net)
    with torch.no_grad():
        twin.conv1.weight.copy_(net.conv1.weight[p1])
        twin.conv1.bias.copy_(net.conv1.bias[p1])
        twin.conv2.weight.copy_(net.conv2.weight[p2][:, p1])
        twin.conv2.bias.copy_(net.conv2.bias[p2])
        w = net.fc.weight.reshape(3, len(p2), 16)[:, p2].reshape(3, -1)
        twin.fc.weight.copy_(w)
    return twin


def _permuted_residual(net, p, q):
    twin = copy.deepcopy(net)
    with torch.no_grad():
        twin.inp.weight.copy_(net.inp.weight[p])
        twin.inp.bias.copy_(net.inp.bias[p])
        twin.up.weight.copy_(net.up.weight[q][:, p])
        twin.up.bias.copy_(net.up.bias[q])
        twin.down.weight.copy_(net.down.weight[p][:, q])
        twin.down.bias.copy_(net.down.bias[p])
        twin.norm.weight.copy_(net.norm.weight[p])
        twin.norm.bias.copy_(net.norm.bias[p])
        twin.head.weight.copy_(net.head.weight[:, p])
    return twin


@pytest.mark.parametrize("make", [CNN, Residual], ids=["conv", "residual"])
def test_a_model_onto_itself_is_the_identity(make, images, rows):
    net = make()
    X = images if make is CNN else rows
    tau = task_vector(_perturbed(net), net)
    tr = TaskVectorTransporter().fit(X, source_base=net, target_base=net)
    for m in tr.maps_:
        np.testing.assert_allclose(m, np.eye(len(m)), atol=1e-6)
    moved = tr.transform(tau)
    assert set(moved) == set(dict(net.named_parameters()))
    for k in tau:
        np.testing.assert_allclose(moved[k], tau[k], atol=1e-5)


def test_permuted_conv_channels_are_recovered(images):
    net = CNN()
    tuned = _perturbed(net)
    p1, p2 = torch.randperm(6), torch.randperm(8)
    twin = _permuted_cnn(net, p1, p2)
    np.testing.assert_allclose(_out(twin, images), _out(net, images), atol=1e-5)
    tr = TaskVectorTransporter().fit(images, source_base=net, target_base=twin)
    moved = tr.apply(twin, tr.transform(tuned))
    np.testing.assert_allclose(_out(moved, images), _out(tuned, images), atol=1e-4)


def test_a_residual_stream_shares_one_map_and_is_recovered(rows):
    net = Residual()
    tuned = _perturbed(net)
    p, q = torch.randperm(12), torch.randperm(16)
    twin = _permuted_residual(net, p, q)
    np.testing.assert_allclose(_out(twin, rows), _out(net, rows), atol=1e-5)
    tr = TaskVectorTransporter().fit(rows, source_base=net, target_base=twin)
    # Spaces: the input, the residual stream (written by inp and down, read
    # by up, the norm and the head: one map), the block's hidden space and
    # the output.
    assert sorted(m.shape for m in tr.maps_) == [(3, 3), (6, 6), (12, 12), (16, 16)]
    moved = tr.apply(twin, tr.transform(tuned))
    np.testing.assert_allclose(_out(moved, rows), _out(tuned, rows), atol=1e-4)


def test_across_widths_the_maps_are_semi_orthogonal(images, rows):
    tr = TaskVectorTransporter().fit(
        images, source_base=CNN(6, 8), target_base=CNN(10, 12, seed=1)
    )
    shapes = sorted(m.shape for m in tr.maps_)
    assert (6, 10) in shapes and (8, 12) in shapes
    for m in tr.maps_:
        small = m.T @ m if m.shape[0] >= m.shape[1] else m @ m.T
        np.testing.assert_allclose(small, np.eye(len(small)), atol=1e-8)
    update = tr.transform(task_vector(_perturbed(CNN(6, 8)), CNN(6, 8)))
    assert update["fc.weight"].shape == (3, 12 * 16)
    assert update["conv2.weight"].shape == (12, 10, 3, 3)


def _functional_forward(params, x):
    h = torch.nn.functional.linear(x, params["inp.weight"], params["inp.bias"])
    inner = torch.relu(torch.nn.functional.linear(h, params["up.weight"]))
    h = h + torch.nn.functional.linear(inner, params["down.weight"])
    return torch.nn.functional.linear(h, params["head.weight"], params["head.bias"])


def _functional(d, k, seed):
    g = torch.Generator().manual_seed(seed)
    shapes = {
        "inp.weight": (d, 6),
        "inp.bias": (d,),
        "up.weight": (k, d),
        "down.weight": (d, k),
        "head.weight": (3, d),
        "head.bias": (3,),
    }
    state = {n: 0.3 * torch.randn(s, generator=g) for n, s in shapes.items()}
    return FunctionalModel(state, _functional_forward)


def test_a_state_dict_with_a_forward_function_is_a_model(rows):
    base = _functional(12, 16, 0)
    tuned = FunctionalModel(
        {k: v + 0.05 for k, v in base.state_dict.items()}, _functional_forward
    )
    tau = task_vector(tuned, base)
    assert set(tau) == set(base.state_dict)
    tr = TaskVectorTransporter().fit(rows, source_base=base, target_base=base)
    moved = tr.transform(tau)
    for k in tau:
        np.testing.assert_allclose(moved[k], tau[k], atol=1e-5)
    out = tr.apply(base, moved)
    assert isinstance(out, FunctionalModel)
    x = torch.as_tensor(rows, dtype=torch.float32)
    with torch.no_grad():
        np.testing.assert_allclose(
            _functional_forward(out.state_dict, x),
            _functional_forward(tuned.state_dict, x),
            atol=1e-5,
        )
    wide = _functional(20, 24, 1)
    update = TaskVectorTransporter().fit(rows, source_base=base, target_base=wide)
    assert update.transform(tau)["down.weight"].shape == (20, 24)


class _Concat(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(6, 4)
        self.b = nn.Linear(8, 3)

    def forward(self, x):
        h = self.a(x)
        return self.b(torch.cat([h, h], dim=1))


class _Shallow(Residual):
    def forward(self, x):  # the block removed
        return self.head(self.norm(self.inp(x)))


class _Swapped(Residual):
    def forward(self, x):  # another operation in the block's place
        h = self.inp(x)
        h = h + self.down(torch.sigmoid(self.up(h)))
        return self.head(self.norm(h))


def test_a_block_removed_drops_its_update_by_name_and_moves_the_rest(rows):
    net, shallow = Residual(), _Shallow(d=16, seed=1)
    del shallow.up, shallow.down  # the block is gone, not only unused
    tuned = _perturbed(net)
    with pytest.warns(UserWarning, match="no counterpart for the source's"):
        tr = TaskVectorTransporter().fit(rows, source_base=net, target_base=shallow)
    assert sorted(tr.dropped_) == ["down.bias", "down.weight", "up.bias", "up.weight"]
    update = tr.transform(tuned)
    assert set(update) == set(dict(shallow.named_parameters()))
    assert update["inp.weight"].shape == (16, 6)
    # The other way round, the target's extra block gets no update.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        back = TaskVectorTransporter().fit(
            rows, source_base=shallow, target_base=Residual(seed=2)
        )
    moved = back.transform(task_vector(_perturbed(shallow), shallow))
    for name in ("up.weight", "up.bias", "down.weight", "down.bias"):
        assert not moved[name].any()
    assert moved["head.weight"].abs().sum() > 0


def test_unsupported_operations_and_graphs_that_differ_are_named(rows):
    with pytest.raises(TypeError, match="uses the operation 'cat'"):
        TaskVectorTransporter().fit(rows, source_base=_Concat(), target_base=_Concat())
    with pytest.raises(ValueError, match="layer graphs differ at operation"):
        TaskVectorTransporter().fit(
            rows, source_base=Residual(), target_base=_Swapped()
        )
    grouped = nn.Sequential(nn.Conv1d(6, 6, 1, groups=3))
    with pytest.raises(TypeError, match="grouped convolution"):
        TaskVectorTransporter().fit(
            rows[:, :, None], source_base=grouped, target_base=grouped
        )


class Encoder(nn.Module):
    """Token embeddings with learned positions, one post-norm encoder block
    (self-attention and a feed-forward layer), mean pooling, a linear head."""

    def __init__(self, d=8, heads=2, ff=16, vocab=20, length=5, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(0.1 * torch.randn(length, d))
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.norm1 = nn.LayerNorm(d)
        self.up = nn.Linear(d, ff)
        self.down = nn.Linear(ff, d)
        self.norm2 = nn.LayerNorm(d)
        self.head = nn.Linear(d, 3)

    def forward(self, ids):
        h = self.embed(ids.long()) + self.pos
        h = self.norm1(h + self.attn(h, h, h, need_weights=False)[0])
        h = self.norm2(h + self.down(torch.relu(self.up(h))))
        return self.head(h.mean(dim=1))


def _within_heads(heads, head_dim):
    """One permutation of the coordinates inside each head, heads in place."""
    return torch.cat([h * head_dim + torch.randperm(head_dim) for h in range(heads)])


def _permuted_encoder(net, p, qk, v, f):
    twin = copy.deepcopy(net)
    E = net.attn.embed_dim
    w, b = net.attn.in_proj_weight, net.attn.in_proj_bias
    rows = torch.cat([qk, E + qk, 2 * E + v])
    with torch.no_grad():
        twin.embed.weight.copy_(net.embed.weight[:, p])
        twin.pos.copy_(net.pos[:, p])
        twin.attn.in_proj_weight.copy_(w[rows][:, p])
        twin.attn.in_proj_bias.copy_(b[rows])
        o = net.attn.out_proj
        twin.attn.out_proj.weight.copy_(o.weight[p][:, v])
        twin.attn.out_proj.bias.copy_(o.bias[p])
        for name in ("norm1", "norm2"):
            for attr in ("weight", "bias"):
                getattr(getattr(twin, name), attr).copy_(
                    getattr(getattr(net, name), attr)[p]
                )
        twin.up.weight.copy_(net.up.weight[f][:, p])
        twin.up.bias.copy_(net.up.bias[f])
        twin.down.weight.copy_(net.down.weight[p][:, f])
        twin.down.bias.copy_(net.down.bias[p])
        twin.head.weight.copy_(net.head.weight[:, p])
    return twin


@pytest.fixture
def tokens():
    return np.random.default_rng(0).integers(0, 20, size=(200, 5))


def test_attention_moves_with_per_head_maps_and_is_exact_on_a_permuted_twin(
    tokens,
):
    net = Encoder()
    tuned = _perturbed(net)
    p, f = torch.randperm(8), torch.randperm(16)
    qk, v = _within_heads(2, 4), _within_heads(2, 4)
    twin = _permuted_encoder(net, p, qk, v, f)
    np.testing.assert_allclose(_out(twin, tokens), _out(net, tokens), atol=1e-5)
    tr = TaskVectorTransporter().fit(tokens, source_base=net, target_base=twin)
    # Queries and keys share one map per head, values another; both block
    # diagonal (heads stay apart).
    blocks = [m for m in tr.maps_ if m.shape == (8, 8)]
    assert any(
        np.allclose(m[:4, 4:], 0) and not np.allclose(m, np.eye(8)) for m in blocks
    )
    moved = tr.apply(twin, tr.transform(tuned))
    np.testing.assert_allclose(_out(moved, tokens), _out(tuned, tokens), atol=1e-4)
    onto_itself = TaskVectorTransporter().fit(tokens, source_base=net, target_base=net)
    tau = task_vector(tuned, net)
    for k, value in onto_itself.transform(tau).items():
        np.testing.assert_allclose(value, tau[k], atol=1e-5)


def test_wider_heads_and_a_different_head_count(tokens):
    narrow, wide = Encoder(d=8, ff=16), Encoder(d=12, ff=24, seed=1)
    tr = TaskVectorTransporter().fit(tokens, source_base=narrow, target_base=wide)
    update = tr.transform(task_vector(_perturbed(narrow), narrow))
    assert update["attn.in_proj_weight"].shape == (36, 12)
    assert update["pos"].shape == (5, 12)
    with pytest.raises(ValueError, match="do not correspond"):
        TaskVectorTransporter().fit(
            tokens, source_base=narrow, target_base=Encoder(d=12, heads=3)
        )
    layer = nn.Sequential(nn.Linear(6, 8), nn.TransformerEncoderLayer(8, 2))
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        TaskVectorTransporter().fit(
            np.zeros((10, 6)), source_base=layer, target_base=layer
        )


class _OverLength(nn.Module):
    """A Linear over the length axis of a Conv1d's output (not its channels)."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, 1)
        self.mix = nn.Linear(3, 3)
        self.head = nn.Linear(12, 2)

    def forward(self, x):
        h = self.mix(self.conv(x.reshape(-1, 2, 3)))
        return self.head(torch.flatten(h, 1))


class _Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.inp, self.fc, self.head = nn.Linear(6, 8), nn.Linear(8, 8), nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.fc(torch.relu(self.fc(self.inp(x)))))


class _Sequence(nn.Module):
    """Rows reshaped to (n, length, features), a Linear over the features."""

    def __init__(self, width=8, seed=0):
        super().__init__()
        torch.manual_seed(seed)
        self.inp, self.head = nn.Linear(3, width), nn.Linear(width, 3)

    def forward(self, x):
        h = torch.relu(self.inp(x.reshape(-1, 2, 3)))
        return self.head(h.mean(dim=1))


def test_layers_that_read_other_axes_or_share_weights_are_refused(rows):
    with pytest.raises(ValueError, match="a linear layer must read the channels"):
        TaskVectorTransporter().fit(
            rows, source_base=_OverLength(), target_base=_OverLength()
        )
    with pytest.raises(TypeError, match="uses the parameter 'fc.weight' in two"):
        TaskVectorTransporter().fit(rows, source_base=_Twice(), target_base=_Twice())
    # Reshaped input: the layer reads the input's last axis (the identity map).
    tr = TaskVectorTransporter().fit(
        rows, source_base=_Sequence(8), target_base=_Sequence(12, seed=1)
    )
    update = tr.transform(task_vector(_perturbed(_Sequence(8)), _Sequence(8)))
    assert update["inp.weight"].shape == (12, 3)


def test_fit_leaves_the_models_train_and_eval_flags_as_they_were(rows):
    net = Residual().train()
    net.up.eval()
    TaskVectorTransporter().fit(rows, source_base=net, target_base=Residual(seed=1))
    assert net.training and not net.up.training and net.down.training


# --- least squares on traced models -------------------------------------------


def test_least_squares_is_exact_on_permuted_conv_channels():
    images = np.random.default_rng(0).normal(size=(300, 64))
    net = CNN()
    tuned = _perturbed(net)
    twin = _permuted_cnn(net, torch.randperm(6), torch.randperm(8))
    tr = TaskVectorTransporter(align="lstsq", ridge=1e-10)
    tr.fit(images, source_base=net, target_base=twin)
    moved = tr.apply(twin, tr.transform(tuned))
    np.testing.assert_allclose(_out(moved, images), _out(tuned, images), atol=1e-4)


@pytest.mark.parametrize("kind", ["residual", "attention"])
def test_least_squares_matches_the_updates_effect_to_first_order(kind, rows, tokens):
    # Where a layer reads a rank-deficient design (a stream written from 6
    # inputs, a LayerNorm's zero-mean output) least squares is exact on the
    # calibration rows' span only: the moved update has the source update's
    # effect at the base, so the outputs agree to first order in its size.
    if kind == "residual":
        net, X = Residual(), rows
        twin = _permuted_residual(net, torch.randperm(12), torch.randperm(16))
    else:
        net, X = Encoder(), tokens
        qk, v = _within_heads(2, 4), _within_heads(2, 4)
        twin = _permuted_encoder(net, torch.randperm(8), qk, v, torch.randperm(16))
    tuned = _perturbed(net, scale=1e-3)
    tr = TaskVectorTransporter(align="lstsq", ridge=1e-10)
    moved = tr.fit(X, source_base=net, target_base=twin).apply(
        twin, tr.transform(tuned)
    )
    change = _out(tuned, X) - _out(net, X)
    moved_change = _out(moved, X) - _out(twin, X)
    assert np.abs(moved_change - change).max() < 1e-2 * np.abs(change).max()


def test_least_squares_fits_a_convolutions_effect_better_than_the_maps(images):
    # conv2 reads conv1's channels, which differ between the two models:
    # least squares matches the update's effect on what each conv2 reads;
    # the semi-orthogonal maps only approximate it.
    narrow, wide = CNN(c1=4, c2=6), CNN(c1=8, c2=10, seed=1)
    tau = task_vector(_perturbed(narrow), narrow)
    x = torch.as_tensor(images, dtype=torch.float32).reshape(-1, 1, 8, 8)
    conv = functools.partial(torch.nn.functional.conv2d, padding=1)

    def residual(tr):
        update = tr.fit(images, source_base=narrow, target_base=wide).transform(tau)
        out_space = {n: a for n, _, a in tr._source.params}["conv2.weight"][0]
        with torch.no_grad():
            h_a, h_b = (torch.relu(m.conv1(x)) for m in (narrow, wide))
        aim = conv(h_a, tau["conv2.weight"], tau["conv2.bias"]).movedim(1, -1)
        got = conv(h_b, update["conv2.weight"], update["conv2.bias"]).movedim(1, -1)
        return float(np.linalg.norm(got.numpy() - aim.numpy() @ tr.maps_[out_space]))

    least = residual(TaskVectorTransporter(align="lstsq", ridge=1e-8))
    mapped = residual(TaskVectorTransporter())
    assert least < 0.5 * mapped
    # Functional matching trades the fit against the distance to the mapped
    # update: its residual lies between the two.
    anchored = residual(TaskVectorTransporter(align="functional", ridge=0.1))
    assert least <= anchored < mapped


class _Strided(nn.Module):
    def __init__(self, stride):
        super().__init__()
        self.conv = nn.Conv1d(2, 4, 3, stride=stride)
        self.pool = nn.AdaptiveAvgPool1d(1)
        self.head = nn.Linear(4, 2)

    def forward(self, x):
        h = self.pool(torch.relu(self.conv(x.reshape(-1, 2, 9))))
        return self.head(torch.flatten(h, 1))


def test_layers_that_give_different_numbers_of_rows_are_refused():
    X = np.random.default_rng(0).normal(size=(40, 18))
    for align in ("procrustes", "lstsq"):
        with pytest.raises(ValueError, match=r"give 280 and 160 rows of channels"):
            TaskVectorTransporter(align=align).fit(
                X, source_base=_Strided(1), target_base=_Strided(2)
            )


def test_functional_matching_of_an_attention_block_anchors_on_the_maps(tokens):
    narrow, wide = Encoder(d=8, ff=16), Encoder(d=12, ff=24, seed=1)
    tau = task_vector(_perturbed(narrow), narrow)

    def moved(**params):
        tr = TaskVectorTransporter(**params)
        return tr.fit(tokens, source_base=narrow, target_base=wide).transform(tau)

    mapped = moved()
    # A large ridge keeps the mapped weights (biases are refit, never shrunk).
    for k, v in moved(align="functional", ridge=1e9).items():
        if not k.endswith("bias"):
            np.testing.assert_allclose(v, mapped[k], atol=1e-5)
    refit = moved(align="functional", ridge=0.1)
    for k in ("attn.in_proj_weight", "attn.out_proj.weight", "up.weight"):
        assert not np.allclose(refit[k], mapped[k], atol=1e-3), k
    for k in ("embed.weight", "pos", "norm1.weight"):  # moved by the maps
        np.testing.assert_allclose(refit[k], mapped[k])
