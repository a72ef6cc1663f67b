"""Models beyond chains: a torch.fx graph whose tensors share channel spaces.

A network that is not a plain chain of linear layers (convolutions, residual
blocks, layer norm) is traced with ``torch.fx`` on the calibration rows. Every
tensor of the graph gets the *space* of its channels (the feature dimension:
dimension 1 for convolutions, the last one after a linear layer):

- a ``Linear`` or a convolution writes a new space and reads another; its
  weight is tied to both (``(out, in)``; the kernel dimensions are not
  touched) and its bias to the first; an ``Embedding`` writes a space, and
  its rows (tokens) move like biases, as does a learned offset added to a
  value (positions);
- a self-attention ``MultiheadAttention`` reads the stream and writes a new
  space through ``out_proj``; its queries and keys share one space and its
  values another, each aligned head by head (a block-diagonal map, heads
  kept apart: a query and a key of one head move together, so their dot
  products are kept);
- element-wise layers (activations, dropout), pooling and ``LayerNorm`` or
  ``BatchNorm`` keep the space of their input; their per-channel parameters
  (``PReLU`` slopes, the norms' scales and shifts) are tied to it;
- ``x + f(x)`` (a skip connection) makes the two operands one space: one map
  serves every tensor a residual stream ties;
- ``flatten`` of ``(n, channels, ...)`` gives a product space: the channel
  space repeated once per position, whose map is ``kron(T, I)``;
- the model's input and output spaces are shared by construction (same
  features, same outputs): their maps are the identity.

Any other operation, and any parameter the graph does not tie to a space, is
refused by name: a task vector never loses a parameter silently.
"""

# Authors: The sklearn_ext developers
# SPDX-License-Identifier: BSD-3-Clause

import operator
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "FunctionalModel",
    "GraphSpec",
    "graph_io",
    "layer_designs",
    "stack_reads",
    "trace_spaces",
]

# Layers that keep their input's space, by class name; the parameters of the
# ones in _PER_CHANNEL are per channel (or one shared value).
_KEEP = {
    "ReLU", "LeakyReLU", "ReLU6", "PReLU", "ELU", "SELU", "CELU", "GELU",
    "SiLU", "Mish", "Tanh", "Hardtanh", "Sigmoid", "Softplus", "Softsign",
    "Tanhshrink", "Identity", "Dropout", "Dropout1d", "Dropout2d",
    "AlphaDropout", "MaxPool1d", "MaxPool2d", "AvgPool1d", "AvgPool2d",
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "LayerNorm", "BatchNorm1d", "BatchNorm2d",
}  # fmt: skip
_PER_CHANNEL = {"PReLU", "LayerNorm", "BatchNorm1d", "BatchNorm2d"}
_CONV = {"Conv1d", "Conv2d"}
# Weight of a layer's own output beside what the next layer reads, when a
# space is aligned: enough to fix the directions the reads leave free, too
# little to move the others.
_TIE_BREAK = 1e-2
_OTHER_LAYERS = {"Linear", "Flatten", "Embedding", "MultiheadAttention"}
_CASTS = {"contiguous", "long", "int", "float", "double", "half", "to", "type"}
_KEEP_FUNCTIONS = {
    "relu", "gelu", "silu", "tanh", "sigmoid", "elu", "leaky_relu", "dropout",
    "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d", "adaptive_avg_pool1d",
    "adaptive_avg_pool2d", "softplus", "mish", "hardtanh", "relu6",
}  # fmt: skip


class FunctionalModel:
    """A model given as a state dict and a forward function.

    Parameters
    ----------
    state_dict : dict
        ``{name: tensor}``: the model's parameters.
    forward : callable
        ``forward(params, x)``: the model's output for the batch ``x``,
        reading the parameters from the dict ``params`` (with
        ``torch.nn.functional`` operations: ``F.linear``, ``F.conv2d``,
        ``F.layer_norm``, activations, ``+`` for skip connections).

    Notes
    -----
    :meth:`module` builds an ``nn.Module`` holding copies of the tensors as
    parameters, which is what ``torch.fx`` traces. Task vectors and
    transported updates of a functional model use the state dict's names,
    and :meth:`TaskVectorTransporter.apply` returns a new functional model.
    """

    def __init__(self, state_dict, forward):
        self.state_dict = state_dict
        self.forward = forward

    def module(self):
        """The ``nn.Module`` that runs ``forward`` on the stored parameters.

        Returns
        -------
        module : torch.nn.Module
            Holds copies of the tensors as parameters ``p0, p1, ...`` and maps
            them back to the state dict's names in ``original_names``.
        """
        import torch

        forward, names = self.forward, list(self.state_dict)

        class _Module(torch.nn.Module):
            def __init__(self, state):
                super().__init__()
                self.original_names = {}
                for i, name in enumerate(names):
                    value = torch.as_tensor(state[name]).detach().clone()
                    self.register_parameter(f"p{i}", torch.nn.Parameter(value))
                    self.original_names[f"p{i}"] = name

            def forward(self, x):
                params = {n: getattr(self, f"p{i}") for i, n in enumerate(names)}
                return forward(params, x)

        return _Module(self.state_dict)


class _Spaces:
    """Union-find over channel spaces; a fixed space maps by the identity."""

    def __init__(self):
        self.parent, self.width, self.fixed, self.heads = [], [], [], []

    def new(self, width, fixed=False, heads=1):
        self.parent.append(len(self.parent))
        self.width.append(int(width))
        self.fixed.append(fixed)
        self.heads.append(int(heads))
        return len(self.parent) - 1

    def find(self, s):
        while self.parent[s] != s:
            self.parent[s] = self.parent[self.parent[s]]
            s = self.parent[s]
        return s

    def union(self, a, b, where):
        a, b = self.find(a), self.find(b)
        if a == b:
            return a
        if self.width[a] != self.width[b]:
            raise ValueError(
                f"{where}: a skip connection adds tensors of {self.width[a]} and "
                f"{self.width[b]} channels."
            )
        keep, drop = (a, b) if a < b else (b, a)
        if self.heads[keep] != 1 or self.heads[drop] != 1:
            raise ValueError(f"{where}: attention heads' spaces cannot be joined.")
        self.parent[drop] = keep
        self.fixed[keep] = self.fixed[keep] or self.fixed[drop]
        return keep


@dataclass
class _Value:
    """A tensor's channels: its space, the dimension that holds them, and how
    many positions a flatten folded into them (1: none)."""

    space: int
    dim: int
    repeat: int = 1


@dataclass
class GraphSpec:
    """What a transport needs to know of a traced model.

    ``params`` lists, in graph order, ``(name, role, spaces)``: role
    ``"weight"`` (spaces: out, in, the in-space's repeat), ``"bias"`` (out),
    ``"unit"`` (the space, or None for one shared value). ``spaces`` are
    canonical indices (first appearance), ``fixed`` the ones mapped by the
    identity; ``reads`` holds per space the nodes whose values align it, with
    a weight (1 for what a parameterised layer reads, else a tie-break).
    ``signature`` is the graph's operations, for correspondence checks.
    ``layers`` maps each weight that multiplies what its layer reads to
    ``(its bias or None, the graph node that applies it, kind)``, kind
    ``"dense"`` (a linear layer or a convolution), ``"qkv"`` or
    ``"out_proj"`` (an attention's projections), for :func:`layer_designs`.
    """

    kind: str
    params: list
    widths: list
    fixed: list
    reads: dict
    signature: list
    shapes: dict = field(default_factory=dict)
    heads: list = field(default_factory=list)
    param_ops: list = field(default_factory=list)
    layers: dict = field(default_factory=dict)

    def renamed(self, names):
        """The spec with parameter names mapped through ``names``."""
        return GraphSpec(
            kind=self.kind,
            params=[(names[n], r, a) for n, r, a in self.params],
            widths=self.widths,
            fixed=self.fixed,
            reads=self.reads,
            signature=self.signature,
            shapes={names[n]: v for n, v in self.shapes.items()},
            heads=self.heads,
            param_ops=self.param_ops,
            layers={
                names[w]: (None if b is None else names[b], node, kind)
                for w, (b, node, kind) in self.layers.items()
            },
        )


def _leaf_name(module):
    return type(module).__name__


def _function_name(target):
    return getattr(target, "__name__", str(target))


def trace_spaces(module, example, kind, where):
    """Trace ``module`` on ``example`` and tie every tensor to its space.

    Returns the :class:`GraphSpec` and the traced ``GraphModule``.
    """
    import torch
    from torch import fx
    from torch.fx.passes.shape_prop import ShapeProp

    try:
        gm = fx.symbolic_trace(module)
    except Exception as err:  # fx raises many kinds on untraceable code
        raise TypeError(
            f"{where} cannot be traced by torch.fx ({type(err).__name__}: {err}); "
            "write its forward with traceable operations, or pass a "
            "FunctionalModel."
        ) from None
    modules = dict(gm.named_modules())
    for node in gm.graph.nodes:  # unsupported layers are named before any run
        if node.op == "call_module":
            cls = _leaf_name(modules[node.target])
            if cls not in _KEEP and cls not in _CONV and cls not in _OTHER_LAYERS:
                advice = (
                    " Write the block out with MultiheadAttention, Linear and "
                    "LayerNorm layers (its fused fast path cannot be traced)."
                    if cls.startswith("Transformer")
                    else ""
                )
                raise TypeError(
                    f"{where} holds a {cls} layer ({node.target!r}), which the "
                    "transport does not support: supported are Linear, Conv1d, "
                    "Conv2d, Embedding, MultiheadAttention (self-attention), "
                    "LayerNorm, BatchNorm, pooling, Flatten and element-wise "
                    "layers, joined by skip connections." + advice
                )
    # The train/eval flag of every submodule, restored after the trace.
    flags = [(m, m.training) for m in module.modules()]
    gm.eval()
    try:
        with torch.no_grad():
            ShapeProp(gm).propagate(example)
    except Exception as err:
        raise ValueError(
            f"{where} does not run on the calibration rows "
            f"({type(err).__name__}: {err})."
        ) from None
    finally:
        for m, flag in flags:
            m.training = flag
    spaces = _Spaces()
    values, params, signature, reads, param_ops = {}, [], [], [], []
    layers = {}
    used = set()

    def shape(node):
        meta = node.meta.get("tensor_meta")
        return None if meta is None else tuple(meta.shape)

    def value_of(arg, name):
        if not isinstance(arg, fx.Node) or arg not in values:
            raise TypeError(f"{where}: {name} reads a value the trace cannot follow.")
        return values[arg]

    def _reduce(node, src):
        v = values[src]
        ndim = len(shape(src))
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        dims = [dims] if isinstance(dims, int) else list(dims or [])
        dims = [d % ndim for d in dims]
        keepdim = node.kwargs.get("keepdim", False)
        if not dims or v.dim in dims or v.repeat != 1:
            raise TypeError(
                f"{where}: a reduction over the channels (or over every "
                "dimension) leaves no space to transport."
            )
        dim = v.dim if keepdim else v.dim - sum(d < v.dim for d in dims)
        values[node] = _Value(v.space, dim)

    def keep(node, src, dim=None):
        v = values[src]
        values[node] = _Value(v.space, v.dim if dim is None else dim, v.repeat)

    def add_param(name, role, *args):
        if name in used:
            raise TypeError(
                f"{where} uses the parameter {name!r} in two places: a shared "
                "weight would need one map for both uses, which the transport "
                "does not support."
            )
        used.add(name)
        params.append((name, role, args))
        param_ops.append(len(signature) - 1)

    def layer(node, in_arg, weight, bias, conv, name):
        v = value_of(in_arg, name)
        out_shape = shape(node)
        out_dim = 1 if conv else len(out_shape) - 1
        out_width = out_shape[out_dim]
        if conv and v.dim != 1:
            raise ValueError(f"{where}: {name} reads channels on dimension {v.dim}.")
        last = len(shape(in_arg)) - 1
        if not conv and v.dim != last:
            if not spaces.fixed[spaces.find(v.space)]:
                raise ValueError(
                    f"{where}: {name} reads the last dimension of a tensor whose "
                    f"channels are on dimension {v.dim}: a linear layer must read "
                    "the channels."
                )
            # The input, reshaped (e.g. to (n, length, features)): what the
            # layer reads is a dimension of the input, mapped by the identity.
            v = _Value(spaces.new(shape(in_arg)[last], fixed=True), last)
        reads.append((len(signature) - 1, v.space, in_arg, v, 1.0, None))
        out = spaces.new(out_width)
        values[node] = _Value(out, out_dim)
        reads.append(
            (len(signature) - 1, out, node, values[node], None, None)
        )  # the tie-break
        add_param(weight, "weight", out, v.space, v.repeat)
        if bias is not None:
            add_param(bias, "bias", out)
        layers[weight] = (bias, node.name, "dense")
        return out

    def _attention(node, m, name):
        q_in, k_in, v_in = (list(node.args) + [None] * 3)[:3]
        q_in = node.kwargs.get("query", q_in)
        k_in = node.kwargs.get("key", k_in)
        v_in = node.kwargs.get("value", v_in)
        if not (q_in is k_in is v_in) or q_in is None:
            raise TypeError(
                f"{where}: the attention {name!r} must be self-attention "
                "(query, key and value the same tensor)."
            )
        if not m._qkv_same_embed_dim or m.bias_k is not None or m.add_zero_attn:
            raise TypeError(
                f"{where}: the attention {name!r} has separate key/value sizes, "
                "bias_k/bias_v or add_zero_attn, which the transport does not support."
            )
        x = value_of(q_in, name)
        if x.dim != len(shape(q_in)) - 1:
            raise ValueError(f"{where}: {name} reads channels that are not last.")
        E, H = m.embed_dim, m.num_heads
        qk = spaces.new(E, heads=H)
        vs = spaces.new(E, heads=H)
        out = spaces.new(E)
        values[node] = ("tuple", _Value(out, x.dim))
        reads.append((len(signature) - 1, x.space, q_in, x, 1.0, None))
        reads.append((len(signature) - 1, qk, q_in, x, 1.0, ("qk", name)))
        reads.append((len(signature) - 1, vs, q_in, x, 1.0, ("v", name)))
        add_param(f"{name}.in_proj_weight", "qkv_weight", qk, vs, x.space)
        if m.in_proj_bias is not None:
            add_param(f"{name}.in_proj_bias", "qkv_bias", qk, vs)
        add_param(f"{name}.out_proj.weight", "weight", out, vs, 1)
        if m.out_proj.bias is not None:
            add_param(f"{name}.out_proj.bias", "bias", out)
        in_bias = None if m.in_proj_bias is None else f"{name}.in_proj_bias"
        out_bias = None if m.out_proj.bias is None else f"{name}.out_proj.bias"
        layers[f"{name}.in_proj_weight"] = (in_bias, node.name, "qkv")
        layers[f"{name}.out_proj.weight"] = (out_bias, node.name, "out_proj")

    for node in gm.graph.nodes:
        if node.op == "placeholder":
            s = shape(node)
            dim = len(s) - 1 if len(s) == 2 else 1
            values[node] = _Value(spaces.new(s[dim], fixed=True), dim)
            signature.append(("input", s[1:]))
            continue
        if node.op == "get_attr":
            continue
        if node.op == "output":
            out = value_of(node.args[0], "the output")
            root = spaces.find(out.space)
            spaces.fixed[root] = True
            signature.append(("output", shape(node.args[0])[1:]))
            continue
        if node.op == "call_module":
            m = modules[node.target]
            name, cls = node.target, _leaf_name(m)
            kernel = tuple(m.weight.shape[2:]) if cls in _CONV else ()
            if cls == "MultiheadAttention":
                kernel = (m.num_heads,)
            signature.append((cls, kernel))
            if cls == "Embedding":
                out_shape = shape(node)
                out = spaces.new(out_shape[-1])
                values[node] = _Value(out, len(out_shape) - 1)
                reads.append((len(signature) - 1, out, node, values[node], None, None))
                add_param(f"{name}.weight", "bias", out)  # rows: tokens
            elif cls == "MultiheadAttention":
                _attention(node, m, name)
            elif cls == "Linear" or cls in _CONV:
                if cls in _CONV and m.groups != 1:
                    raise TypeError(
                        f"{where}: the grouped convolution {name!r} (groups="
                        f"{m.groups}) is not supported: its channels do not mix."
                    )
                bias = None if m.bias is None else f"{name}.bias"
                layer(node, node.args[0], f"{name}.weight", bias, cls in _CONV, name)
            elif cls == "Flatten":
                _flatten(node, values, shape, m.start_dim, m.end_dim, where, name)
            elif cls in _KEEP:
                v = value_of(node.args[0], name)
                keep(node, node.args[0])
                if cls in _PER_CHANNEL:
                    for pname, p in m.named_parameters(recurse=False):
                        per = p.numel() > 1
                        if cls == "LayerNorm" and v.dim != len(shape(node)) - 1:
                            raise ValueError(
                                f"{where}: the LayerNorm {name!r} does not normalise "
                                "the channel dimension."
                            )
                        add_param(f"{name}.{pname}", "unit", v.space if per else None)
            else:
                raise TypeError(
                    f"{where} holds a {cls} layer ({name!r}), which the transport "
                    "does not support: supported are Linear, Conv1d, Conv2d, "
                    "LayerNorm, BatchNorm, pooling, Flatten and element-wise "
                    "layers, joined by skip connections."
                )
            continue
        fname = _function_name(node.target)
        signature.append((fname,))
        if fname == "getitem" and isinstance(values.get(node.args[0]), tuple):
            if node.args[1] == 0:  # an attention's output, not its weights
                values[node] = values[node.args[0]][1]
            continue
        tensors = [a for a in node.args if isinstance(a, fx.Node) and a in values]
        attrs = [a for a in node.args if getattr(a, "op", None) == "get_attr"]
        if fname in ("add", "iadd") and len(tensors) == 1 and attrs:
            # A learned offset added to a value (positions): moves like a bias.
            v = values[tensors[0]]
            if v.dim != len(shape(node)) - 1:
                raise ValueError(
                    f"{where}: the parameter {attrs[0].target!r} is added to "
                    "channels that are not last."
                )
            add_param(_attr_name(attrs[0], where), "bias", v.space)
            keep(node, tensors[0])
            continue
        if fname in ("mean", "sum", "amax") and len(tensors) == 1:
            _reduce(node, tensors[0])
            continue
        if (
            node.op == "call_function"
            and node.target in (operator.add, operator.sub)
            or (fname in ("add", "sub") and len(tensors) == 2)
        ):
            if len(tensors) == 2:
                a, b = (values[t] for t in tensors)
                if a.dim != b.dim or a.repeat != b.repeat:
                    raise ValueError(
                        f"{where}: a skip connection joins unlike tensors."
                    )
                s = spaces.union(a.space, b.space, where)
                values[node] = _Value(s, a.dim, a.repeat)
            else:
                keep(node, tensors[0])
            continue
        if fname in ("mul", "truediv") and len(tensors) == 1:
            keep(node, tensors[0])  # scaling by a number
            continue
        if fname in _KEEP_FUNCTIONS or fname in _CASTS:
            keep(node, tensors[0])
            continue
        if fname == "flatten":
            start = (
                node.args[1] if len(node.args) > 1 else node.kwargs.get("start_dim", 0)
            )
            end = node.args[2] if len(node.args) > 2 else node.kwargs.get("end_dim", -1)
            _flatten(node, values, shape, start, end, where, fname)
            continue
        if (
            fname in ("reshape", "view")
            and spaces.fixed[spaces.find(values[tensors[0]].space)]
        ):
            # The input reshaped (e.g. flat rows to images): still the input.
            s = shape(node)
            dim = len(s) - 1 if len(s) == 2 else 1
            values[node] = _Value(spaces.new(s[dim], fixed=True), dim)
            continue
        if fname in ("linear", "conv1d", "conv2d"):
            groups = node.args[6] if len(node.args) > 6 else node.kwargs.get("groups")
            if fname != "linear" and groups not in (None, 1):
                raise TypeError(
                    f"{where}: the grouped convolution {node.name!r} (groups="
                    f"{groups}) is not supported: its channels do not mix."
                )
            w = node.args[1]
            b = node.args[2] if len(node.args) > 2 else node.kwargs.get("bias")
            wname = _attr_name(w, where)
            bname = None if b is None else _attr_name(b, where)
            layer(node, node.args[0], wname, bname, fname != "linear", fname)
            continue
        if fname == "layer_norm":
            keep(node, node.args[0])
            for arg in node.args[2:4]:
                if isinstance(arg, fx.Node):
                    add_param(_attr_name(arg, where), "unit", values[node].space)
            continue
        raise TypeError(
            f"{where} uses the operation {fname!r}, which the transport does not "
            "support (supported: linear layers and convolutions, element-wise "
            "functions, pooling, layer norm, flatten, and + for skip connections)."
        )
    named = dict(gm.named_parameters())
    left = sorted(set(named) - used)
    if left:
        raise TypeError(
            f"{where} has parameters the transport cannot tie to a space: {left}; "
            "they would be left out of the task vector."
        )
    # Canonical space indices, in order of first appearance.
    n_spaces = {"weight": 2, "qkv_weight": 3, "qkv_bias": 2}
    order = {}
    for _name, role, args in params:
        for s in args[: n_spaces.get(role, 1)]:
            if s is not None:
                order.setdefault(spaces.find(s), len(order))
    for _op, s, *_ in reads:
        order.setdefault(spaces.find(s), len(order))

    def canon(s):
        return None if s is None else order[spaces.find(s)]

    out_params = []
    for name, role, args in params:
        k = n_spaces.get(role, 1)
        out_params.append((name, role, (*map(canon, args[:k]), *args[k:])))
    widths = [0] * len(order)
    fixed = [False] * len(order)
    heads = [1] * len(order)
    for root, i in order.items():
        widths[i] = spaces.width[root]
        fixed[i] = spaces.fixed[root]
        heads[i] = spaces.heads[root]
    by_space = {}
    for op, s, node, v, weight, derive in reads:
        by_space.setdefault(order[spaces.find(s)], []).append(
            (node.name, v.dim, v.repeat, weight, derive, op)
        )
    spec = GraphSpec(
        kind=kind,
        params=out_params,
        widths=widths,
        fixed=fixed,
        reads=by_space,
        signature=signature,
        shapes={name: tuple(named[name].shape) for name, _, _ in out_params},
        heads=heads,
        param_ops=param_ops,
        layers=layers,
    )
    return spec, gm


def _attr_name(node, where):
    if getattr(node, "op", None) != "get_attr":
        raise TypeError(
            f"{where}: a layer's weight is not one of the model's parameters."
        )
    return node.target


def _flatten(node, values, shape, start, end, where, name):
    v = values[node.args[0]]
    s = shape(node.args[0])
    end = end % len(s)
    if start != 1 or end != len(s) - 1 or v.dim != 1:
        raise ValueError(
            f"{where}: {name} must flatten everything after the batch dimension of "
            "a (batch, channels, ...) tensor."
        )
    values[node] = _Value(v.space, 1, v.repeat * int(np.prod(s[2:], dtype=int)))


def graph_io(gm, inputs, spec):
    """Activations of every read of every space.

    Returns ``{space: [(key, rows, weight), ...]}``: ``key`` is ``(the
    reading operation's index, the attention part or None, whether the read
    is a tie-break)``, ``rows`` an ``(n, width)`` float64 array, ``weight``
    None for a tie-break (a layer's own output, see :func:`stack_reads`).
    """
    import torch
    from torch import fx

    wanted = {entry[0] for entries in spec.reads.values() for entry in entries}
    seen = {}

    class _Recorder(fx.Interpreter):
        def run_node(self, n):
            out = super().run_node(n)
            if n.name in wanted:
                seen[n.name] = out.detach()
            return out

    _run_in_eval_mode(_Recorder(gm), inputs)
    modules = dict(gm.named_modules())
    out = {}
    for space, entries in spec.reads.items():
        blocks = []
        for name, dim, repeat, weight, derive, op in entries:
            t = seen[name]
            if derive is not None:  # an attention's queries and keys, or values
                with torch.no_grad():
                    t = _projections(modules[derive[1]], t, derive[0])
            if repeat > 1:  # flattened (channel, position): positions are rows
                t = t.reshape(t.shape[0], -1, repeat).movedim(1, -1)
            else:
                t = t.movedim(dim, -1)
            block = t.reshape(-1, t.shape[-1]).cpu().double().numpy()
            key = (op, None if derive is None else derive[0], weight is None)
            blocks.append((key, block, weight))
        out[space] = blocks
    return out


def layer_designs(gm, inputs, spec):
    """What every layer of ``spec.layers`` multiplies its weight with.

    Returns ``{weight name: (n_rows, fan_in) float64 array}``: the rows a
    linear layer reads (channels last, every position a row), a
    convolution's input patches (the layer run with an identity kernel, so
    its own stride, padding and dilation apply; columns in the order of
    ``weight.reshape(out, -1)``), the stream an attention projects, and the
    heads' mixed values its ``out_proj`` reads.
    """
    import copy

    import torch
    from torch import fx

    by_node = {}
    for weight, (_, node, kind) in spec.layers.items():
        by_node.setdefault(node, []).append((weight, kind))
    modules = dict(gm.named_modules())
    designs = {}

    def rows(t, dim=-1):
        t = t.detach().movedim(dim, -1)
        return t.reshape(-1, t.shape[-1]).cpu().double().numpy()

    def identity_kernel(w):
        fan_in = int(np.prod(w.shape[1:]))
        eye = torch.eye(fan_in, dtype=w.dtype, device=w.device)
        return eye.reshape(fan_in, *w.shape[1:])

    class _Recorder(fx.Interpreter):
        def run_node(self, n):
            if n.name in by_node:
                args, kwargs = self.fetch_args_kwargs_from_env(n)
                for weight, kind in by_node[n.name]:
                    designs[weight] = self._design(n, args, kwargs, kind)
            return super().run_node(n)

        def _design(self, n, args, kwargs, kind):
            x = args[0]
            if kind == "qkv":
                return rows(x)
            if kind == "out_proj":  # the attention with an identity out_proj
                m = copy.deepcopy(modules[n.target])
                m.out_proj.weight.copy_(torch.eye(m.embed_dim))
                if m.out_proj.bias is not None:
                    m.out_proj.bias.zero_()
                return rows(m(*args, **kwargs)[0])
            if n.op == "call_module":
                m = modules[n.target]
                if _leaf_name(m) == "Linear":
                    return rows(x)
                return rows(m._conv_forward(x, identity_kernel(m.weight), None), 1)
            if _function_name(n.target) == "linear":
                return rows(x)
            w = args[1]
            rest = {k: v for k, v in kwargs.items() if k not in ("weight", "bias")}
            return rows(n.target(x, identity_kernel(w), None, *args[3:], **rest), 1)

    _run_in_eval_mode(_Recorder(gm), inputs)
    return designs


def _run_in_eval_mode(interpreter, inputs):
    """Run an ``fx.Interpreter`` of a traced module in eval mode, without
    gradients. The traced module shares the model's layers: their train/eval
    flags are restored afterwards."""
    import torch

    gm = interpreter.module
    flags = [(m, m.training) for m in gm.modules()]
    gm.eval()
    try:
        with torch.no_grad():
            interpreter.run(inputs)
    finally:
        for m, flag in flags:
            m.training = flag


def stack_reads(blocks):
    """One ``(n, width)`` array from a space's reads: what layers read, with
    the layers' own outputs under them at ``_TIE_BREAK`` of the norm (they fix
    the directions the reads leave free: units a ReLU silences on every
    calibration row). Chains and traced models use this one rule.

    ``blocks`` holds ``(key, rows, weight)``; a weight of None marks a
    tie-break block.
    """
    main = [b for _, b, w in blocks if w is not None]
    ties = [b for _, b, w in blocks if w is None]
    if not main:  # no layer reads the space: align on what it holds
        main, ties = ties, []
    rows = np.vstack(main)
    if ties:
        tie = np.vstack(ties)
        scale = _TIE_BREAK * np.linalg.norm(rows) / max(np.linalg.norm(tie), 1e-300)
        rows = np.vstack([rows, scale * tie])
    return rows


def _projections(attention, x, part):
    """Queries stacked over keys (``part="qk"``), or values, of self-attention
    on ``x`` (channels last), as the attention computes them."""
    import torch

    E = attention.embed_dim
    w, b = attention.in_proj_weight, attention.in_proj_bias
    blocks = (0, 1) if part == "qk" else (2,)
    outs = []
    for i in blocks:
        bias = None if b is None else b[i * E : (i + 1) * E]
        outs.append(torch.nn.functional.linear(x, w[i * E : (i + 1) * E], bias))
    return torch.cat(outs, dim=0)
