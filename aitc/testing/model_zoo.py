"""Small ONNX models built in code, for tests, examples and benchmarks.

Every builder returns `(model, example_inputs)`: an `onnx.ModelProto` that passes
`onnx.checker` and runs in onnxruntime, and a dict of deterministic example inputs keyed by the
model's input names. Weights are random but seeded, so a builder called twice with the same
arguments returns byte-identical models.

Node names follow torch.onnx's export style (`/layer.0/attn/MatMul`), and the batch dim of
every image/sequence input is dynamic (`N`), so importing needs `--input-shape` (or the
`input_shapes` argument of `import_onnx`) unless you pin it (`with_static_batch`). The
benchmark `encoder` is static by default (`dynamic_batch=True` makes it dynamic too).

    mlp()                        Gemm / MatMul+Add / Relu / Softmax
    cnn_bn_pool()                Conv+BN+Relu, MaxPool, AveragePool, GlobalAveragePool, Flatten, Gemm
    residual_block()             two ResNet basic blocks (identity and projection shortcut)
    depthwise_separable()        MobileNet block: depthwise Conv, BN, Clip 0..6, pointwise Conv
    transformer_encoder_layer()  one BERT-style layer as torch.onnx exports it (opset 13..20)
    encoder()                    a BERT-style encoder for benchmarks (~90 MB of weights by default)
    bert_torch_export()          BERT with int64 ids/mask inputs, torch's mask arithmetic, GatherND
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import onnx
from numpy.typing import ArrayLike
from onnx import TensorProto, helper, numpy_helper

Inputs = dict[str, np.ndarray]
Dims = Sequence[int | str]


class GraphBuilder:
    """Collects nodes, initializers and graph inputs/outputs for one ONNX graph."""

    def __init__(self, name: str, opset: int = 17, seed: int = 0):
        self.name = name
        self.opset = opset
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self._names: set[str] = set()

    # -- values
    def input(self, name: str, dims: Dims, elem_type: int = TensorProto.FLOAT) -> str:
        """Declares a graph input; string dims are symbolic (dynamic)."""
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, list(dims)))
        return name

    def output(self, value: str, name: str, dims: Dims, elem_type: int = TensorProto.FLOAT) -> str:
        """Declares a graph output `name`, renaming the node output `value` (and its uses) to it."""
        if not any(value in node.output for node in self.nodes):
            raise ValueError(f"no node produces '{value}'")
        for node in self.nodes:
            for names in (node.input, node.output):
                for i, used in enumerate(names):
                    if used == value:
                        names[i] = name
        self.outputs.append(helper.make_tensor_value_info(name, elem_type, list(dims)))
        return name

    def const(self, name: str, value: ArrayLike) -> str:
        """An initializer holding `value` (int lists become int64, floats float32)."""
        array = np.asarray(value)
        if array.dtype == np.float64:
            array = array.astype(np.float32)
        elif array.dtype.kind == "i":
            array = array.astype(np.int64)
        name = self._unique(name)
        self.initializers.append(numpy_helper.from_array(array, name))
        return name

    def weight(self, name: str, shape: Sequence[int], fan_in: int | None = None) -> str:
        """A random float32 weight, scaled by 1/sqrt(fan_in) so activations stay O(1)."""
        fan = fan_in if fan_in is not None else (shape[0] if len(shape) > 0 else 1)
        value = self.rng.standard_normal(tuple(shape)).astype(np.float32) / np.float32(math.sqrt(fan))
        return self.const(name, value)

    def uniform(self, name: str, shape: Sequence[int], low: float, high: float) -> str:
        """A random float32 initializer drawn uniformly from [low, high)."""
        return self.const(name, self.rng.uniform(low, high, tuple(shape)).astype(np.float32))

    # -- nodes
    def node(self, op_type: str, inputs: Sequence[str], name: str, outputs: int = 1, **attributes) -> str:
        """Adds a node named `name`; returns its (first) output, named `name` + ':0'-style suffixes."""
        name = self._unique(name)
        out_names = [f"{name}_output_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op_type, list(inputs), out_names, name=name, **attributes))
        return out_names[0]

    def _unique(self, name: str) -> str:
        candidate, index = name, 1
        while candidate in self._names:
            candidate = f"{name}_{index}"
            index += 1
        self._names.add(candidate)
        return candidate

    # -- model
    def model(self) -> onnx.ModelProto:
        """The finished, checked model."""
        graph = helper.make_graph(self.nodes, self.name, self.inputs, self.outputs, self.initializers)
        opsets = [helper.make_opsetid("", self.opset)]
        model = helper.make_model(
            graph,
            opset_imports=opsets,
            ir_version=helper.find_min_ir_version_for(opsets),
            producer_name="aitc.model_zoo",  # the bundled examples carry this name
        )
        onnx.checker.check_model(model, full_check=True)
        return model


# --------------------------------------------------------------------------- layer helpers


def _linear(b: GraphBuilder, x: str, prefix: str, n_in: int, n_out: int) -> str:
    """torch.nn.Linear on a rank >= 2 input: MatMul by W^T (stored transposed) then Add bias."""
    w = b.weight(f"{prefix}.weight_t", [n_in, n_out])
    bias = b.uniform(f"{prefix}.bias", [n_out], -0.1, 0.1)
    y = b.node("MatMul", [x, w], f"/{prefix}/MatMul")
    return b.node("Add", [y, bias], f"/{prefix}/Add")


def _conv(
    b: GraphBuilder,
    x: str,
    prefix: str,
    c_in: int,
    c_out: int,
    kernel: int,
    stride: int = 1,
    group: int = 1,
    bias: bool = False,
) -> str:
    """A square Conv with 'same' padding for odd kernels."""
    w = b.weight(f"{prefix}.weight", [c_out, c_in // group, kernel, kernel], fan_in=c_in // group * kernel**2)
    inputs = [x, w] + ([b.uniform(f"{prefix}.bias", [c_out], -0.1, 0.1)] if bias else [])
    pad = kernel // 2
    attributes: dict[str, Any] = {
        "kernel_shape": [kernel, kernel],
        "pads": [pad] * 4,
        "strides": [stride, stride],
    }
    if group != 1:
        attributes["group"] = group
    return b.node("Conv", inputs, f"/{prefix}/Conv", **attributes)


def _batch_norm(b: GraphBuilder, x: str, prefix: str, channels: int) -> str:
    """Inference BatchNormalization with random running statistics."""
    scale = b.uniform(f"{prefix}.weight", [channels], 0.5, 1.5)
    shift = b.uniform(f"{prefix}.bias", [channels], -0.2, 0.2)
    mean = b.uniform(f"{prefix}.running_mean", [channels], -0.2, 0.2)
    var = b.uniform(f"{prefix}.running_var", [channels], 0.5, 1.5)
    return b.node(
        "BatchNormalization", [x, scale, shift, mean, var], f"/{prefix}/BatchNormalization", epsilon=1e-5
    )


def _relu6(b: GraphBuilder, x: str, prefix: str) -> str:
    """Relu6 as torch exports it since opset 11: Clip with min/max inputs."""
    low = b.const(f"{prefix}.clip_min", np.float32(0.0))
    high = b.const(f"{prefix}.clip_max", np.float32(6.0))
    return b.node("Clip", [x, low, high], f"/{prefix}/Clip")


def _unsqueeze(b: GraphBuilder, x: str, axes: Sequence[int], name: str) -> str:
    if b.opset >= 13:
        return b.node("Unsqueeze", [x, b.const(f"{name}.axes", list(axes))], name)
    return b.node("Unsqueeze", [x], name, axes=list(axes))


def _reduce_mean(b: GraphBuilder, x: str, axes: Sequence[int], name: str) -> str:
    if b.opset >= 18:
        return b.node("ReduceMean", [x, b.const(f"{name}.axes", list(axes))], name, keepdims=1)
    return b.node("ReduceMean", [x], name, axes=list(axes), keepdims=1)


def _layer_norm(b: GraphBuilder, x: str, prefix: str, hidden: int, decomposed: bool) -> str:
    """LayerNormalization (opset 17+) or torch's opset-13 export of it.

    Decomposed: ReduceMean, Sub, Pow 2, ReduceMean, Add eps, Sqrt, Div, Mul gamma, Add beta.
    """
    gamma = b.uniform(f"{prefix}.weight", [hidden], 0.8, 1.2)
    beta = b.uniform(f"{prefix}.bias", [hidden], -0.1, 0.1)
    if not decomposed:
        return b.node(
            "LayerNormalization", [x, gamma, beta], f"/{prefix}/LayerNormalization", axis=-1, epsilon=1e-5
        )
    p = f"/{prefix}"
    mean = _reduce_mean(b, x, [-1], f"{p}/ReduceMean")
    centered = b.node("Sub", [x, mean], f"{p}/Sub")
    squared = b.node("Pow", [centered, b.const(f"{prefix}.pow_exponent", np.float32(2.0))], f"{p}/Pow")
    var = _reduce_mean(b, squared, [-1], f"{p}/ReduceMean_1")
    var_eps = b.node("Add", [var, b.const(f"{prefix}.eps", np.float32(1e-5))], f"{p}/Add")
    std = b.node("Sqrt", [var_eps], f"{p}/Sqrt")
    normed = b.node("Div", [centered, std], f"{p}/Div")
    scaled = b.node("Mul", [normed, gamma], f"{p}/Mul")
    return b.node("Add", [scaled, beta], f"{p}/Add_1")


def _gelu(b: GraphBuilder, x: str, prefix: str, use_op: bool) -> str:
    """Gelu (opset 20 op) or torch's exact-erf export: x * 0.5 * (1 + erf(x / sqrt 2))."""
    p = f"/{prefix}"
    if use_op:
        return b.node("Gelu", [x], f"{p}/Gelu")
    scaled = b.node("Div", [x, b.const(f"{prefix}.sqrt2", np.float32(math.sqrt(2.0)))], f"{p}/Div")
    erf = b.node("Erf", [scaled], f"{p}/Erf")
    shifted = b.node("Add", [erf, b.const(f"{prefix}.one", np.float32(1.0))], f"{p}/Add")
    product = b.node("Mul", [x, shifted], f"{p}/Mul")
    return b.node("Mul", [product, b.const(f"{prefix}.half", np.float32(0.5))], f"{p}/Mul_1")


def _batch_dim(b: GraphBuilder, x: str, prefix: str) -> str:
    """torch's dynamic-batch idiom: Shape -> Gather(0) -> Unsqueeze(0), a 1-element int64 tensor."""
    shape = b.node("Shape", [x], f"/{prefix}/Shape")
    batch = b.node(
        "Gather", [shape, b.const(f"{prefix}.batch_index", np.int64(0))], f"/{prefix}/Gather", axis=0
    )
    return _unsqueeze(b, batch, [0], f"/{prefix}/Unsqueeze")


def _split_heads(
    b: GraphBuilder, x: str, batch: str, prefix: str, heads: Sequence[int], perm: list[int]
) -> str:
    """[N, S, H*D] -> heads: Reshape to [N, S, H, D] (target computed by Concat), then Transpose."""
    target = b.node("Concat", [batch, b.const(f"{prefix}.shape", list(heads))], f"/{prefix}/Concat", axis=0)
    split = b.node("Reshape", [x, target], f"/{prefix}/Reshape")
    return b.node("Transpose", [split], f"/{prefix}/Transpose", perm=perm)


def _attention(b: GraphBuilder, x: str, mask: str, prefix: str, hidden: int, heads: int, seq: int) -> str:
    """Multi-head self-attention as torch.onnx exports BERT's: returns the output projection."""
    head_dim = hidden // heads
    batch = _batch_dim(b, x, f"{prefix}/batch")
    per_head = [seq, heads, head_dim]
    q = _linear(b, x, f"{prefix}/query", hidden, hidden)
    q = _split_heads(b, q, batch, f"{prefix}/q_heads", per_head, perm=[0, 2, 1, 3])  # N H S D
    k = _linear(b, x, f"{prefix}/key", hidden, hidden)
    k_t = _split_heads(b, k, batch, f"{prefix}/k_heads", per_head, perm=[0, 2, 3, 1])  # N H D S
    v = _linear(b, x, f"{prefix}/value", hidden, hidden)
    v = _split_heads(b, v, batch, f"{prefix}/v_heads", per_head, perm=[0, 2, 1, 3])  # N H S D
    scores = b.node("MatMul", [q, k_t], f"/{prefix}/MatMul")
    scale = b.const(f"{prefix}.scale", np.float32(math.sqrt(head_dim)))
    scores = b.node("Div", [scores, scale], f"/{prefix}/Div")
    scores = b.node("Add", [scores, mask], f"/{prefix}/Add")
    probs = b.node("Softmax", [scores], f"/{prefix}/Softmax", axis=-1)
    context = b.node("MatMul", [probs, v], f"/{prefix}/MatMul_1")
    context = b.node("Transpose", [context], f"/{prefix}/Transpose", perm=[0, 2, 1, 3])
    merged = b.const(f"{prefix}.merged_shape", [0, seq, hidden])  # 0 keeps the batch dim
    context = b.node("Reshape", [context, merged], f"/{prefix}/Reshape")
    return _linear(b, context, f"{prefix}/output/dense", hidden, hidden)


def _extended_mask(b: GraphBuilder, mask: str, prefix: str) -> str:
    """HF BERT's additive mask: (1 - mask[:, None, None, :]) * -10000, shape [N, 1, 1, S]."""
    expanded = _unsqueeze(b, mask, [1, 2], f"/{prefix}/Unsqueeze")
    inverted = b.node("Sub", [b.const(f"{prefix}.one", np.float32(1.0)), expanded], f"/{prefix}/Sub")
    return b.node("Mul", [inverted, b.const(f"{prefix}.neg_inf", np.float32(-10000.0))], f"/{prefix}/Mul")


def _encoder_layer(
    b: GraphBuilder,
    x: str,
    mask: str,
    prefix: str,
    hidden: int,
    heads: int,
    seq: int,
    ffn: int,
    decomposed: bool,
) -> str:
    """Post-norm BERT layer: x = LN(x + Attn(x)); x = LN(x + FFN(x))."""
    attn = _attention(b, x, mask, f"{prefix}/attention", hidden, heads, seq)
    x = b.node("Add", [attn, x], f"/{prefix}/attention/residual/Add")
    x = _layer_norm(b, x, f"{prefix}/attention/LayerNorm", hidden, decomposed)
    h = _linear(b, x, f"{prefix}/intermediate/dense", hidden, ffn)
    h = _gelu(b, h, f"{prefix}/intermediate/gelu", use_op=not decomposed and b.opset >= 20)
    h = _linear(b, h, f"{prefix}/output/dense", ffn, hidden)
    x = b.node("Add", [h, x], f"/{prefix}/output/residual/Add")
    return _layer_norm(b, x, f"{prefix}/output/LayerNorm", hidden, decomposed)


def _mask_example(batch: int, seq: int) -> np.ndarray:
    mask = np.ones((batch, seq), np.float32)
    for row in range(1, batch):  # later rows are padded sequences
        mask[row, seq - (row * seq) // (2 * batch) - 1 :] = 0.0
    return mask


# --------------------------------------------------------------------------- models


def mlp(batch: int = 4, features: int = 64, hidden: int = 128, classes: int = 10, seed: int = 0):
    """Two hidden layers (Gemm transB=1 + Relu, MatMul + Add + Relu), Gemm head, Softmax.

    Input `x` [N, features]; output `probs` [N, classes].
    """
    b = GraphBuilder("mlp", opset=17, seed=seed)
    x = b.input("x", ["N", features])
    w1 = b.weight("fc1.weight", [hidden, features], fan_in=features)  # torch layout: [out, in]
    h = b.node("Gemm", [x, w1, b.uniform("fc1.bias", [hidden], -0.1, 0.1)], "/fc1/Gemm", transB=1)
    h = b.node("Relu", [h], "/relu1/Relu")
    h = b.node("Relu", [_linear(b, h, "fc2", hidden, hidden)], "/relu2/Relu")
    w3 = b.weight("fc3.weight", [classes, hidden], fan_in=hidden)
    logits = b.node("Gemm", [h, w3, b.uniform("fc3.bias", [classes], -0.1, 0.1)], "/fc3/Gemm", transB=1)
    probs = b.node("Softmax", [logits], "/Softmax", axis=-1)
    b.output(probs, "probs", ["N", classes])
    return b.model(), {"x": b.rng.standard_normal((batch, features)).astype(np.float32)}


def cnn_bn_pool(batch: int = 2, image: int = 16, classes: int = 10, seed: int = 0):
    """A small CNN: Conv+BN+Relu, MaxPool, Conv+BN+Relu, AveragePool, Conv+Relu,
    GlobalAveragePool, Flatten, Gemm.

    Input `image` [N, 3, image, image]; output `logits` [N, classes].
    """
    b = GraphBuilder("cnn_bn_pool", opset=17, seed=seed)
    x = b.input("image", ["N", 3, image, image])
    x = _conv(b, x, "conv1", 3, 8, 3)
    x = b.node("Relu", [_batch_norm(b, x, "bn1", 8)], "/relu1/Relu")
    x = b.node("MaxPool", [x], "/pool1/MaxPool", kernel_shape=[2, 2], strides=[2, 2])
    x = _conv(b, x, "conv2", 8, 16, 3)
    x = b.node("Relu", [_batch_norm(b, x, "bn2", 16)], "/relu2/Relu")
    x = b.node("AveragePool", [x], "/pool2/AveragePool", kernel_shape=[2, 2], strides=[2, 2])
    x = b.node("Relu", [_conv(b, x, "conv3", 16, 32, 3, bias=True)], "/relu3/Relu")
    x = b.node("GlobalAveragePool", [x], "/gap/GlobalAveragePool")
    x = b.node("Flatten", [x], "/Flatten", axis=1)
    w = b.weight("fc.weight", [classes, 32], fan_in=32)
    logits = b.node("Gemm", [x, w, b.uniform("fc.bias", [classes], -0.1, 0.1)], "/fc/Gemm", transB=1)
    b.output(logits, "logits", ["N", classes])
    return b.model(), {"image": b.rng.standard_normal((batch, 3, image, image)).astype(np.float32)}


def _shortcut(b: GraphBuilder, x: str, prefix: str, c_in: int, c_out: int, stride: int) -> str:
    """A residual block's shortcut: `x`, or a 1x1 conv-bn projection when the shape changes."""
    if stride == 1 and c_in == c_out:
        return x
    shortcut = _conv(b, x, f"{prefix}/downsample/0", c_in, c_out, 1, stride=stride)
    return _batch_norm(b, shortcut, f"{prefix}/downsample/1", c_out)


def _basic_block(b: GraphBuilder, x: str, prefix: str, c_in: int, c_out: int, stride: int) -> str:
    """ResNet BasicBlock: conv-bn-relu-conv-bn, + shortcut (1x1 conv-bn when shape changes), relu."""
    h = _conv(b, x, f"{prefix}/conv1", c_in, c_out, 3, stride=stride)
    h = b.node("Relu", [_batch_norm(b, h, f"{prefix}/bn1", c_out)], f"/{prefix}/relu/Relu")
    h = _batch_norm(b, _conv(b, h, f"{prefix}/conv2", c_out, c_out, 3), f"{prefix}/bn2", c_out)
    h = b.node("Add", [h, _shortcut(b, x, prefix, c_in, c_out, stride)], f"/{prefix}/Add")
    return b.node("Relu", [h], f"/{prefix}/relu_1/Relu")


def residual_block(batch: int = 2, channels: int = 8, image: int = 12, seed: int = 0):
    """Two ResNet basic blocks: identity shortcut, then stride 2 with a projection shortcut.

    Input `x` [N, channels, image, image]; output `y` [N, 2*channels, image/2, image/2].
    """
    b = GraphBuilder("residual_block", opset=17, seed=seed)
    x = b.input("x", ["N", channels, image, image])
    h = _basic_block(b, x, "layer1.0", channels, channels, 1)
    h = _basic_block(b, h, "layer2.0", channels, 2 * channels, 2)
    out = image // 2
    b.output(h, "y", ["N", 2 * channels, out, out])
    return b.model(), {"x": b.rng.standard_normal((batch, channels, image, image)).astype(np.float32)}


def _bottleneck(b: GraphBuilder, x: str, prefix: str, c_in: int, width: int, stride: int) -> str:
    """ResNet-50's Bottleneck (torchvision v1.5: the stride on the 3x3): 1x1 -> 3x3 -> 1x1 (x4
    channels), each conv-bn (relu but the last), + shortcut (1x1 conv-bn when shape changes), relu."""
    c_out = 4 * width
    h = _conv(b, x, f"{prefix}/conv1", c_in, width, 1)
    h = b.node("Relu", [_batch_norm(b, h, f"{prefix}/bn1", width)], f"/{prefix}/relu/Relu")
    h = _conv(b, h, f"{prefix}/conv2", width, width, 3, stride=stride)
    h = b.node("Relu", [_batch_norm(b, h, f"{prefix}/bn2", width)], f"/{prefix}/relu_1/Relu")
    h = _batch_norm(b, _conv(b, h, f"{prefix}/conv3", width, c_out, 1), f"{prefix}/bn3", c_out)
    h = b.node("Add", [h, _shortcut(b, x, prefix, c_in, c_out, stride)], f"/{prefix}/Add")
    return b.node("Relu", [h], f"/{prefix}/relu_2/Relu")


def resnet50(
    batch: int = 1, image: int = 224, classes: int = 1000, blocks: Sequence[int] = (3, 4, 6, 3), seed: int = 0
):
    """ResNet-50 as torchvision builds it (random weights): 7x7/2 stem conv-bn-relu, 3x3/2 max
    pool, four stages of bottlenecks (`blocks` per stage; widths 64..512, x4 out), global
    average pool, flatten, a fully connected head. ~25.6 M parameters at the defaults.

    Input `x` [N, 3, image, image]; output `logits` [N, classes].
    """
    b = GraphBuilder("resnet50", opset=17, seed=seed)
    x = b.input("x", ["N", 3, image, image])
    h = _conv(b, x, "conv1", 3, 64, 7, stride=2)
    h = b.node("Relu", [_batch_norm(b, h, "bn1", 64)], "/relu/Relu")
    h = b.node("MaxPool", [h], "/maxpool/MaxPool", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    c_in = 64
    for stage, (count, width) in enumerate(zip(blocks, (64, 128, 256, 512), strict=True)):
        for index in range(count):
            stride = 2 if stage > 0 and index == 0 else 1
            h = _bottleneck(b, h, f"layer{stage + 1}.{index}", c_in, width, stride)
            c_in = 4 * width
    h = b.node("GlobalAveragePool", [h], "/avgpool/GlobalAveragePool")
    h = b.node("Flatten", [h], "/Flatten", axis=1)
    w = b.weight("fc.weight", [classes, c_in], fan_in=c_in)
    logits = b.node("Gemm", [h, w, b.uniform("fc.bias", [classes], -0.1, 0.1)], "/fc/Gemm", transB=1)
    b.output(logits, "logits", ["N", classes])
    return b.model(), {"x": b.rng.standard_normal((batch, 3, image, image)).astype(np.float32)}


def depthwise_separable(batch: int = 2, channels: int = 8, image: int = 12, seed: int = 0):
    """MobileNet's block: depthwise 3x3 Conv (group=C), BN, Relu6 (Clip 0..6), pointwise 1x1 Conv,
    BN, Relu6.

    Input `x` [N, channels, image, image]; output `y` [N, 2*channels, image, image].
    """
    b = GraphBuilder("depthwise_separable", opset=17, seed=seed)
    x = b.input("x", ["N", channels, image, image])
    h = _conv(b, x, "dw", channels, channels, 3, group=channels)
    h = _relu6(b, _batch_norm(b, h, "dw_bn", channels), "dw_relu6")
    h = _conv(b, h, "pw", channels, 2 * channels, 1)
    h = _relu6(b, _batch_norm(b, h, "pw_bn", 2 * channels), "pw_relu6")
    b.output(h, "y", ["N", 2 * channels, image, image])
    return b.model(), {"x": 2 * b.rng.standard_normal((batch, channels, image, image)).astype(np.float32)}


def transformer_encoder_layer(
    opset: int = 17,
    hidden: int = 64,
    heads: int = 4,
    seq: int = 16,
    ffn: int = 128,
    decomposed: bool = False,
    batch: int = 2,
    seed: int = 0,
):
    """One BERT encoder layer as torch.onnx exports it.

    Inputs `x` [N, seq, hidden] and `attention_mask` [N, seq] (1 = token, 0 = padding);
    output `y` [N, seq, hidden]. The attention reshapes its heads through the dynamic-batch
    idiom Shape -> Gather -> Unsqueeze -> Concat -> Reshape.

    LayerNormalization exists from opset 17 and Gelu from opset 20; `decomposed=True` (forced
    below opset 17) writes both as torch's opset-13 export does, and below opset 20 GELU is
    always the Div/Erf/Add/Mul/Mul form.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    decomposed = decomposed or opset < 17
    b = GraphBuilder("transformer_encoder_layer", opset=opset, seed=seed)
    x = b.input("x", ["N", seq, hidden])
    mask = _extended_mask(b, b.input("attention_mask", ["N", seq]), "mask")
    y = _encoder_layer(b, x, mask, "layer.0", hidden, heads, seq, ffn, decomposed)
    b.output(y, "y", ["N", seq, hidden])
    example = {
        "x": b.rng.standard_normal((batch, seq, hidden)).astype(np.float32),
        "attention_mask": _mask_example(batch, seq),
    }
    return b.model(), example


def encoder(
    layers: int = 6,
    hidden: int = 512,
    heads: int = 8,
    ffn: int = 2048,
    seq: int = 128,
    vocab: int = 7000,
    opset: int = 17,
    decomposed: bool = False,
    batch: int = 1,
    dynamic_batch: bool = False,
    seed: int = 0,
):
    """A BERT-style encoder for benchmarks: embeddings (token Gather + position Add + LayerNorm),
    then `layers` encoder layers.

    Inputs `input_ids` int64 [B, seq] and `attention_mask` [B, seq]; output `last_hidden_state`
    [B, seq, hidden], where B is `batch` (static, so a benchmark imports it as is) or, with
    `dynamic_batch=True`, the symbolic dim `N`.

    The defaults hold 90,260,248 bytes of weights (86.1 MiB): 6 layers of 12,609,656 bytes
    each, a 14,336,000-byte token embedding (vocab 7000 x 512), 262,144 bytes of position
    embeddings, a 4,096-byte LayerNorm and 72 bytes of shape constants; see `weight_bytes`.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    decomposed = decomposed or opset < 17
    b = GraphBuilder("encoder", opset=opset, seed=seed)
    n: int | str = "N" if dynamic_batch else batch
    ids = b.input("input_ids", [n, seq], TensorProto.INT64)
    mask = _extended_mask(b, b.input("attention_mask", [n, seq]), "mask")
    table = b.weight("embeddings.word_embeddings.weight", [vocab, hidden], fan_in=1)
    x = b.node("Gather", [table, ids], "/embeddings/word_embeddings/Gather", axis=0)
    positions = b.weight("embeddings.position_embeddings", [1, seq, hidden], fan_in=1)
    x = b.node("Add", [x, positions], "/embeddings/Add")
    x = _layer_norm(b, x, "embeddings/LayerNorm", hidden, decomposed)
    for index in range(layers):
        x = _encoder_layer(b, x, mask, f"encoder/layer.{index}", hidden, heads, seq, ffn, decomposed)
    b.output(x, "last_hidden_state", [n, seq, hidden])
    example = {
        "input_ids": b.rng.integers(0, vocab, (batch, seq)).astype(np.int64),
        "attention_mask": _mask_example(batch, seq),
    }
    return b.model(), example


def _dim(b: GraphBuilder, x: str, index: int, prefix: str) -> str:
    """torch's `x.size(index)`: Shape -> Gather, a scalar int64."""
    shape = b.node("Shape", [x], f"/{prefix}/Shape")
    index_value = b.const(f"{prefix}.dim{index}", np.int64(index))
    return b.node("Gather", [shape, index_value], f"/{prefix}/Gather", axis=0)


def _torch_expand(b: GraphBuilder, x: str, sizes: Sequence[str], prefix: str) -> str:
    """torch's `x.expand(*sizes)` as its exporter writes it: the sizes (1-element int64 tensors)
    are concatenated, then every -1 is replaced by 1 with ConstantOfShape/Mul/Equal/Where."""
    p = f"/{prefix}"
    size = b.node("Concat", list(sizes), f"{p}/Concat", axis=0)
    size = b.node("Reshape", [size, b.const(f"{prefix}.flat", [-1])], f"{p}/Reshape")
    one = numpy_helper.from_array(np.ones(1, np.int64))
    rank = b.node("Shape", [size], f"{p}/Shape")
    ones = b.node("ConstantOfShape", [rank], f"{p}/ConstantOfShape", value=one)
    minus_ones = b.node("Mul", [ones, b.const(f"{prefix}.minus_one", np.int64(-1))], f"{p}/Mul")
    keep = b.node("Equal", [size, minus_ones], f"{p}/Equal")
    size = b.node("Where", [keep, ones, size], f"{p}/Where")
    return b.node("Expand", [x, size], f"{p}/Expand")


def _bert_embeddings(
    b: GraphBuilder, ids: str, token_types: str | None, sizes: tuple[int, int, int, int], batch: str
) -> str:
    """BertEmbeddings: word + token-type + position embeddings, LayerNorm. Position ids (and,
    without a `token_type_ids` input, the token types) are slices of int64 buffers."""
    vocab, hidden, max_positions, type_vocab = sizes
    seq_len = _unsqueeze(b, _dim(b, ids, 1, "embeddings/seq"), [0], "/embeddings/Unsqueeze")
    zero, one = b.const("embeddings.slice_start", [0]), b.const("embeddings.slice_axis", [1])
    buffer = b.const("embeddings.position_ids", np.arange(max_positions, dtype=np.int64)[None])
    positions = b.node("Slice", [buffer, zero, seq_len, one, one], "/embeddings/Slice")
    if token_types is None:
        buffer = b.const("embeddings.token_type_ids", np.zeros((1, max_positions), np.int64))
        sliced = b.node("Slice", [buffer, zero, seq_len, one, one], "/embeddings/Slice_1")
        token_types = _torch_expand(b, sliced, [batch, seq_len], "embeddings/token_type_ids")
    words = b.weight("embeddings.word_embeddings.weight", [vocab, hidden], fan_in=1)
    x = b.node("Gather", [words, ids], "/embeddings/word_embeddings/Gather", axis=0)
    types = b.weight("embeddings.token_type_embeddings.weight", [type_vocab, hidden], fan_in=1)
    t = b.node("Gather", [types, token_types], "/embeddings/token_type_embeddings/Gather", axis=0)
    x = b.node("Add", [x, t], "/embeddings/Add")
    table = b.weight("embeddings.position_embeddings.weight", [max_positions, hidden], fan_in=1)
    p = b.node("Gather", [table, positions], "/embeddings/position_embeddings/Gather", axis=0)
    x = b.node("Add", [x, p], "/embeddings/Add_1")
    return _layer_norm(b, x, "embeddings/LayerNorm", hidden, decomposed=False)


def _bert_mask(b: GraphBuilder, mask: str, ids: str, pad_token_id: int, batch: str, seq_len: str) -> str:
    """The additive attention mask [B, 1, S, S] from the int64 mask and the token ids; in torch:

    keep = mask[:, None, None, :].bool() & (input_ids != pad)[:, None, None, :]
    inverted = 1.0 - keep.expand(B, 1, S, S).float()
    additive = inverted.masked_fill(inverted.bool(), torch.finfo(torch.float32).min)
    """
    m = _unsqueeze(b, _unsqueeze(b, mask, [1], "/mask/Unsqueeze"), [2], "/mask/Unsqueeze_1")
    m = b.node("Cast", [m], "/mask/Cast", to=TensorProto.BOOL)
    pad = b.node("Equal", [ids, b.const("mask.pad_token_id", np.int64(pad_token_id))], "/mask/Equal")
    real = b.node("Not", [pad], "/mask/Not")
    real = _unsqueeze(b, _unsqueeze(b, real, [1], "/mask/Unsqueeze_2"), [2], "/mask/Unsqueeze_3")
    keep = b.node("And", [m, real], "/mask/And")
    one = b.const("mask.one_dim", [1])
    keep = _torch_expand(b, keep, [batch, one, seq_len, seq_len], "mask/expand")
    keep = b.node("Cast", [keep], "/mask/Cast_1", to=TensorProto.FLOAT)
    inverted = b.node("Sub", [b.const("mask.one", np.float32(1.0)), keep], "/mask/Sub")
    masked = b.node("Cast", [inverted], "/mask/Cast_2", to=TensorProto.BOOL)
    lowest = b.const("mask.finfo_min", np.float32(np.finfo(np.float32).min))
    return b.node("Where", [masked, lowest, inverted], "/mask/Where")


def _last_token(b: GraphBuilder, hidden: str, mask: str, batch: str) -> str:
    """hidden[arange(batch), mask.sum(1) - 1]: the last non-padding token of each sequence, as
    GatherND over [row, position] index rows (`batch` is a scalar int64)."""
    lengths = b.node("ReduceSum", [mask, b.const("pool.sum_axes", [1])], "/pool/ReduceSum", keepdims=0)
    last = b.node("Sub", [lengths, b.const("pool.one", np.int64(1))], "/pool/Sub")
    start, delta = b.const("pool.start", np.int64(0)), b.const("pool.delta", np.int64(1))
    rows = _unsqueeze(b, b.node("Range", [start, batch, delta], "/pool/Range"), [1], "/pool/Unsqueeze")
    last = _unsqueeze(b, last, [1], "/pool/Unsqueeze_1")
    index = b.node("Concat", [rows, last], "/pool/Concat", axis=1)
    return b.node("GatherND", [hidden, index], "/pool/GatherND", batch_dims=0)


def _bert_head(b: GraphBuilder, token: str, hidden: int, labels: int) -> tuple[str, str]:
    """BertPooler (dense + tanh) on the picked token, then a classifier: (pooled, logits)."""
    w = b.weight("pooler.dense.weight", [hidden, hidden], fan_in=hidden)
    bias = b.uniform("pooler.dense.bias", [hidden], -0.1, 0.1)
    pooled = b.node("Gemm", [token, w, bias], "/pooler/dense/Gemm", transB=1)
    pooled = b.node("Tanh", [pooled], "/pooler/activation/Tanh")
    w = b.weight("classifier.weight", [labels, hidden], fan_in=hidden)
    bias = b.uniform("classifier.bias", [labels], -0.1, 0.1)
    return pooled, b.node("Gemm", [pooled, w, bias], "/classifier/Gemm", transB=1)


def _bert_example(b: GraphBuilder, batch: int, seq: int, vocab: int, pad_token_id: int) -> Inputs:
    """Token ids (`pad_token_id` exactly where the mask is 0), a mask whose later rows are
    padded, and two segments (token types 0, then 1) per sequence."""
    mask = _mask_example(batch, seq).astype(np.int64)
    ids = b.rng.integers(0, vocab - 1, (batch, seq)).astype(np.int64)
    ids = np.where(ids >= pad_token_id, ids + 1, ids)
    ids = np.where(mask == 1, ids, np.int64(pad_token_id))
    lengths = mask.sum(axis=1, keepdims=True)
    types = ((np.arange(seq)[None] >= lengths // 2) & (mask == 1)).astype(np.int64)
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}


def bert_torch_export(
    layers: int = 2,
    hidden: int = 64,
    heads: int = 4,
    ffn: int = 128,
    seq: int = 16,
    vocab: int = 100,
    max_positions: int = 64,
    type_vocab: int = 2,
    labels: int = 2,
    pad_token_id: int = 0,
    batch: int = 2,
    dynamic_batch: bool = False,
    token_type_ids: bool = True,
    seed: int = 0,
):
    """A BERT encoder with a last-token classification head, as torch.onnx.export (opset 17)
    writes HF's BertModel with the sdpa-era mask code.

    Inputs `input_ids`, `attention_mask` (1 = token, 0 = padding) and, with `token_type_ids`,
    `token_type_ids`, all int64 [B, seq]; outputs `last_hidden_state` [B, seq, hidden],
    `pooler_output` [B, hidden] (tanh(dense(hidden state of the last non-padding token))) and
    `logits` [B, labels]. B is `batch`, or the symbolic `N` with `dynamic_batch=True`.

    Integer/bool arithmetic on the inputs at run time: Cast int64 -> bool, Equal/Not (ids !=
    pad), And, Expand to [B, 1, S, S], Cast bool -> float -> bool, Where (masked_fill) for the
    mask; ReduceSum, Sub, Unsqueeze, Concat and GatherND for the pooled token. The shape
    arithmetic (Shape, Gather, Slice of the int64 `position_ids` buffer, Range,
    ConstantOfShape/Mul/Equal/Where of torch's `expand`) folds at import once B is known.
    """
    if hidden % heads:
        raise ValueError(f"hidden {hidden} is not a multiple of heads {heads}")
    if seq > max_positions:
        raise ValueError(f"seq {seq} exceeds max_positions {max_positions}")
    b = GraphBuilder("bert_torch_export", opset=17, seed=seed)
    n: int | str = "N" if dynamic_batch else batch
    ids = b.input("input_ids", [n, seq], TensorProto.INT64)
    mask = b.input("attention_mask", [n, seq], TensorProto.INT64)
    types = b.input("token_type_ids", [n, seq], TensorProto.INT64) if token_type_ids else None
    batch_size = _dim(b, ids, 0, "batch")
    batch_dim = _unsqueeze(b, batch_size, [0], "/batch/Unsqueeze")
    x = _bert_embeddings(b, ids, types, (vocab, hidden, max_positions, type_vocab), batch_dim)
    seq_dim = _unsqueeze(b, _dim(b, mask, 1, "mask/seq"), [0], "/mask/seq/Unsqueeze")
    additive = _bert_mask(b, mask, ids, pad_token_id, batch_dim, seq_dim)
    for index in range(layers):
        x = _encoder_layer(b, x, additive, f"encoder/layer.{index}", hidden, heads, seq, ffn, False)
    pooled, logits = _bert_head(b, _last_token(b, x, mask, batch_size), hidden, labels)
    b.output(x, "last_hidden_state", [n, seq, hidden])
    b.output(pooled, "pooler_output", [n, hidden])
    b.output(logits, "logits", [n, labels])
    example = _bert_example(b, batch, seq, vocab, pad_token_id)
    if not token_type_ids:
        del example["token_type_ids"]
    return b.model(), example


def mlp_with_host_ops(batch: int = 4, features: int = 16, hidden: int = 32, classes: int = 8):
    """A model for heterogeneous placement: fc1 -> Sin (no NPU lowering) -> x Cast(int64 mask)
    (host: the NPU has no i64) -> fc2, then ArgMax (host) beside the `logits` output.

    Inputs `x` [batch, features] and `mask` int64 [batch, hidden]; outputs `logits` and `label`
    (int64). Compiled, it runs as host, NPU, host, NPU, host segments."""
    rng = np.random.default_rng(0)
    w1 = numpy_helper.from_array(rng.standard_normal((features, hidden)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, classes)).astype(np.float32), "w2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h"], name="fc1"),
        helper.make_node("Sin", ["h"], ["s"], name="sin"),
        helper.make_node("Cast", ["mask"], ["mask_f"], name="cast_mask", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["s", "mask_f"], ["masked"], name="apply_mask"),
        helper.make_node("MatMul", ["masked", "w2"], ["logits"], name="fc2"),
        helper.make_node("ArgMax", ["logits"], ["label"], name="argmax", axis=1, keepdims=0),
    ]
    graph = helper.make_graph(
        nodes,
        "mixed",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, features]),
            helper.make_tensor_value_info("mask", TensorProto.INT64, [batch, hidden]),
        ],
        [
            helper.make_tensor_value_info("logits", TensorProto.FLOAT, [batch, classes]),
            helper.make_tensor_value_info("label", TensorProto.INT64, [batch]),
        ],
        [w1, w2],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    inputs = {
        "x": rng.standard_normal((batch, features)).astype(np.float32),
        "mask": rng.integers(0, 2, (batch, hidden)).astype(np.int64),
    }
    return model, inputs


DIGITS_TRAIN = 1200
"""`digits_mlp` trains on digits 0..1199; the other 597 are held out."""


def digits_mlp() -> tuple[onnx.ModelProto, np.ndarray, np.ndarray]:
    """A 64-32-10 MLP (MatMul, Add, Relu, MatMul, Add; batch dim "N") trained by scikit-learn
    on the first `DIGITS_TRAIN` of its bundled digits (8x8 images scaled to [0, 1]), and all
    the images and labels. A real dataset a package ships, for quantization accuracy; scikit-learn
    is a test dependency."""
    import warnings

    from sklearn.datasets import load_digits
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier

    images, labels = load_digits(return_X_y=True)
    images = (images / 16.0).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        classifier = MLPClassifier(hidden_layer_sizes=(32,), max_iter=300, random_state=0)
        classifier.fit(images[:DIGITS_TRAIN], labels[:DIGITS_TRAIN])
    (w1, w2), (b1, b2) = classifier.coefs_, classifier.intercepts_
    weights = [numpy_helper.from_array(v.astype(np.float32), n) for n, v in
               (("w1", w1), ("b1", b1), ("w2", w2), ("b2", b2))]  # fmt: skip
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="bias1"),
        helper.make_node("Relu", ["h1"], ["h"], name="relu"),
        helper.make_node("MatMul", ["h", "w2"], ["y0"], name="fc2"),
        helper.make_node("Add", ["y0", "b2"], ["logits"], name="bias2"),
    ]
    graph = helper.make_graph(
        nodes, "digits", [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 64])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["N", 10])], weights,
    )  # fmt: skip
    return (
        helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]),
        images,
        labels.astype(np.int64),
    )


def with_static_batch(model: onnx.ModelProto, batch: int = 1) -> onnx.ModelProto:
    """A copy of `model` whose symbolic (dynamic) input/output dims are pinned to `batch`."""
    pinned = onnx.ModelProto()
    pinned.CopyFrom(model)
    for value in [*pinned.graph.input, *pinned.graph.output]:
        for dim in value.type.tensor_type.shape.dim:
            if dim.HasField("dim_param"):
                dim.dim_value = batch
    onnx.checker.check_model(pinned, full_check=True)
    return pinned


def weight_bytes(model: onnx.ModelProto) -> int:
    """Total bytes of the model's initializers (its weights)."""
    total = 0
    for tensor in model.graph.initializer:
        itemsize = np.dtype(helper.tensor_dtype_to_np_dtype(tensor.data_type)).itemsize
        total += int(np.prod(tensor.dims, dtype=np.int64)) * itemsize
    return total


ZOO = {
    "mlp": mlp,
    "cnn_bn_pool": cnn_bn_pool,
    "residual_block": residual_block,
    "depthwise_separable": depthwise_separable,
    "transformer_encoder_layer": transformer_encoder_layer,
    "encoder": encoder,
    "bert_torch_export": bert_torch_export,
    "mlp_with_host_ops": mlp_with_host_ops,
}
"""Builder name -> builder function."""
