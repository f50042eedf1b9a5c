"""Ascend's fused layer kernels on a host: dropout / dropout_v3, deformable_conv2d, randomchoicewithmask.

dropout, dropout_v3   y = x·mask / keep_prob with mask ~ Bernoulli(keep_prob) (over noise_shape, broadcast):
                      TensorFlow's dropout, which also draws its mask from (seed, graph seed) as the adapter
                      does; the two NPU kernels differ only in how they lay the mask out in memory.
deformable_conv2d     the DeformableOffsets + Conv2D pair the adapter builds: every output position (ho, wo)
                      and kernel tap (i, j) of deformable group g samples x bilinearly (zero outside the image)
                      at (ho·stride_h - pad_top + i·dilation_h + Δy, wo·stride_w - pad_left + j·dilation_w + Δx),
                      scales the sample by the tap's mask (DCNv2; modulated=False: DCNv1, no mask), and the
                      [N, Ho·kh, Wo·kw, C] map of samples is convolved with `filter` at stride (kh, kw).
                      offsets channels: all Δx, then all Δy, then the masks, each block indexed
                      g·kh·kw + i·kw + j (modulated=False: the Δx and Δy blocks; a mask block is ignored).
drop_out_gen_mask     the mask kernel scripts call themselves (gen_npu_ops): one bit per element of `shape`, set
                      with probability keep_prob, packed 8 to a uint8 (lowest bit first) and padded to a multiple
                      of 128 elements, as Ascend's DropOutGenMask lays it out. Its _v3 form has a byte per element
                      (a vector padded to 16, or 16 x 16 fractal blocks; see drop_out_gen_mask_v3). Both draw
                      from TensorFlow's stateful RandomUniform with the op's (seed, seed2): a new mask at every
                      run, a fixed sequence of masks for fixed seeds, unpredictable ones for seeds None or 0.
drop_out_do_mask      y = x·bit / keep_prob, with the bits of such a mask in x's element order.
fast_gelu             y = x·sigmoid(1.702·x); fast_gelu_grad: dy·(s + 1.702·x·s·(1 - s)), s = sigmoid(1.702·x).
randomchoicewithmask  up to `count` coordinates of x's true elements in random order, [count, rank(x)] int32,
                      padded with zeros, and a [count] mask of the valid rows; count=0 returns them all.
"""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.errors import NpuOptionTypeError, NpuOptionValueError
from npu_bridge_compat.fused.checks import (
    check_choice,
    check_int,
    check_int_list,
    check_keep_prob,
    graph_mode_only,
)


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    """npu_ops.dropout: elements kept with probability keep_prob and scaled by 1 / keep_prob."""
    with tf.name_scope(name or "dropout"):
        x = tf.convert_to_tensor(x, name="x")
        if not x.dtype.is_floating:
            raise NpuOptionValueError(f"x must be a floating point tensor. Got a {x.dtype.name} tensor instead.")
        check_keep_prob(keep_prob)
        if isinstance(keep_prob, float) and keep_prob == 1.0:
            return x
        return tf.nn.dropout(x, rate=1 - keep_prob, noise_shape=noise_shape, seed=seed)


def dropout_v3(x, keep_prob, noise_shape=None, seed=None, name=None):
    """npu_aicore_ops.dropout_v3: the same dropout as npu_ops.dropout (eager execution allowed, as in the
    adapter)."""
    return dropout(x, keep_prob, noise_shape=noise_shape, seed=seed, name=name or "dropout_v3")


_MASK_ALIGNMENT = 128  # elements: Ascend's DropOutGenMask pads its bit mask to a multiple of this
_BIT_VALUES = (1, 2, 4, 8, 16, 32, 64, 128)
_V3_ALIGNMENT = 16  # DropOutGenMaskV3: a byte per element, padded to a multiple of 16; fractal blocks of 16 x 16


def _op_seeds(seed, seed2) -> tuple[int, int]:
    """The seed attributes as the adapter's generated op wrappers take them: None is the attribute's default, 0."""
    return tuple(0 if value is None else int(value) for value in (seed, seed2))


def _uniform_draw(count, seed, seed2) -> tf.Tensor:
    """`count` uniform floats from TensorFlow's stateful RandomUniform with the op's own (seed, seed2): a new draw
    at every run of the op, a fixed sequence of draws for fixed seeds, unpredictable ones for (0, 0), eagerly, in
    graphs and in tf.functions alike, as Ascend's DropOutGenMask kernels draw."""
    seed, seed2 = _op_seeds(seed, seed2)
    return tf.raw_ops.RandomUniform(shape=tf.reshape(count, [1]), dtype=tf.float32, seed=seed, seed2=seed2)


def drop_out_gen_mask(shape, prob, seed=0, seed2=0, name=None):
    """gen_npu_ops.drop_out_gen_mask: a packed bit mask (uint8) over `shape`, each bit 1 with probability
    `prob` (the keep probability)."""
    with tf.name_scope(name or "DropOutGenMask"):
        count = tf.reduce_prod(tf.cast(shape, tf.int64))
        padded = (count + _MASK_ALIGNMENT - 1) // _MASK_ALIGNMENT * _MASK_ALIGNMENT
        uniform = _uniform_draw(padded, seed, seed2)
        bits = tf.reshape(tf.cast(uniform < tf.cast(prob, tf.float32), tf.int32), [-1, 8])
        return tf.cast(tf.reduce_sum(bits * tf.constant(_BIT_VALUES), axis=1), tf.uint8)


def drop_out_do_mask(x, mask, keep_prob, name=None):
    """gen_npu_ops.drop_out_do_mask: x where the mask's bit is set, scaled by 1 / keep_prob; 0 elsewhere."""
    with tf.name_scope(name or "DropOutDoMask"):
        x = tf.convert_to_tensor(x)
        bits = tf.bitwise.bitwise_and(tf.cast(mask, tf.int32)[:, None], tf.constant(_BIT_VALUES)) > 0
        kept = tf.reshape(tf.reshape(bits, [-1])[: tf.size(x)], tf.shape(x))
        return tf.where(kept, x / tf.cast(keep_prob, x.dtype), tf.zeros_like(x))


def _fractal_dims(shape) -> list[int] | None:
    """[*batch, M, N] when `shape` is known while the graph is built, has rank 2 or more and M and N divide by 16:
    then DropOutGenMaskV3 lays its mask out in [*batch, N/16, M/16, 16, 16] blocks (Ascend's FRACTAL_NZ)."""
    dims = tf.get_static_value(shape)
    if dims is None or len(dims) < 2 or dims[-1] % _V3_ALIGNMENT or dims[-2] % _V3_ALIGNMENT:
        return None
    return [int(d) for d in dims]


def _fractal_permutation(rank: int) -> list[int]:
    """[*batch, M/16, 16, N/16, 16] -> [*batch, N/16, M/16, 16, 16]."""
    batch = list(range(rank - 4))
    return [*batch, rank - 2, rank - 4, rank - 3, rank - 1]


def drop_out_gen_mask_v3(shape, prob, seed=0, seed2=0, name=None):
    """npu_aicore_ops.drop_out_gen_mask_v3: a byte (0 or 1) per element of `shape`, 1 with probability `prob`;
    as a vector padded to a multiple of 16, or, for [*batch, M, N] with M and N multiples of 16, in
    [*batch, N/16, M/16, 16, 16] blocks (the shapes the adapter's op registration gives)."""
    with tf.name_scope(name or "DropOutGenMaskV3"):
        fractal = _fractal_dims(shape)
        count = tf.reduce_prod(tf.cast(shape, tf.int64))
        padded = count if fractal else (count + _V3_ALIGNMENT - 1) // _V3_ALIGNMENT * _V3_ALIGNMENT
        kept = tf.cast(_uniform_draw(padded, seed, seed2) < tf.cast(prob, tf.float32), tf.uint8)
        if not fractal:
            return kept
        *batch, rows, columns = fractal
        blocks = tf.reshape(kept, [*batch, rows // 16, 16, columns // 16, 16])
        return tf.transpose(blocks, _fractal_permutation(len(fractal) + 2))


def drop_out_do_mask_v3(x, mask, keep_prob, name=None):
    """npu_aicore_ops.drop_out_do_mask_v3: x where drop_out_gen_mask_v3's mask is 1, scaled by 1 / keep_prob."""
    with tf.name_scope(name or "DropOutDoMaskV3"):
        x = tf.convert_to_tensor(x)
        mask = tf.convert_to_tensor(mask)
        if mask.shape.rank is not None and mask.shape.rank >= 4:  # fractal blocks back to element order
            rank = mask.shape.rank
            inverse = tf.math.invert_permutation(_fractal_permutation(rank))
            mask = tf.transpose(mask, inverse)
        kept = tf.reshape(tf.reshape(mask, [-1])[: tf.size(x)], tf.shape(x)) > 0
        return tf.where(kept, x / tf.cast(keep_prob, x.dtype), tf.zeros_like(x))


@tf.custom_gradient
def fast_gelu(x):
    """gen_npu_ops.fast_gelu: x·sigmoid(1.702·x), with the kernel's own gradient (fast_gelu_grad)."""
    x = tf.convert_to_tensor(x)
    return x * tf.sigmoid(1.702 * x), lambda dy: fast_gelu_grad(dy, x)


def fast_gelu_grad(dy, x):
    """gen_npu_ops.fast_gelu_grad: the gradient of fast_gelu at x, times dy."""
    s = tf.sigmoid(1.702 * x)
    return dy * (s + 1.702 * x * s * (1 - s))


def _bilinear_samples(image, rows, cols) -> tf.Tensor:
    """image [N, H, W, G, Cg] sampled at float rows / cols [N, Ho, Wo, G, kh, kw]: [N, Ho, Wo, G, kh, kw, Cg],
    corners outside the image counting as zero."""
    shape = tf.shape(image)
    height, width = shape[1], shape[2]
    top, left = tf.floor(rows), tf.floor(cols)
    batch = tf.broadcast_to(tf.range(shape[0])[:, None, None, None, None, None], tf.shape(rows))
    group = tf.broadcast_to(tf.range(shape[3])[None, None, None, :, None, None], tf.shape(rows))
    samples = 0.0
    for row, row_weight in ((top, 1 - (rows - top)), (top + 1, rows - top)):
        for col, col_weight in ((left, 1 - (cols - left)), (left + 1, cols - left)):
            row_index, col_index = tf.cast(row, tf.int32), tf.cast(col, tf.int32)
            inside = (row_index >= 0) & (row_index < height) & (col_index >= 0) & (col_index < width)
            where = tf.stack(
                [batch, tf.clip_by_value(row_index, 0, height - 1), tf.clip_by_value(col_index, 0, width - 1), group],
                axis=-1,
            )
            weight = row_weight * col_weight * tf.cast(inside, rows.dtype)
            samples += tf.gather_nd(image, where) * weight[..., None]
    return samples


def _deformable_offsets(x, offsets, ksize, strides, pads, dilations, deformable_groups, modulated) -> tf.Tensor:
    """The NHWC map [N, Ho·kh, Wo·kw, C] of deformed samples (the NPU's DeformableOffsets)."""
    (kh, kw), (stride_h, stride_w), (dilation_h, dilation_w) = ksize, strides, dilations
    channels = x.shape[-1]
    taps = deformable_groups * kh * kw
    shape = tf.shape(offsets)
    n, out_h, out_w = shape[0], shape[1], shape[2]

    def block(index):
        return tf.reshape(offsets[..., index * taps : (index + 1) * taps], [n, out_h, out_w, deformable_groups, kh, kw])

    base_rows = (tf.range(out_h) * stride_h - pads[0])[:, None] + tf.range(kh) * dilation_h  # [Ho, kh]
    base_cols = (tf.range(out_w) * stride_w - pads[2])[:, None] + tf.range(kw) * dilation_w  # [Wo, kw]
    rows = tf.cast(base_rows[None, :, None, None, :, None], x.dtype) + block(1)
    cols = tf.cast(base_cols[None, None, :, None, None, :], x.dtype) + block(0)
    image = tf.reshape(x, [n, tf.shape(x)[1], tf.shape(x)[2], deformable_groups, channels // deformable_groups])
    samples = _bilinear_samples(image, rows, cols)
    if modulated:
        samples *= block(2)[..., None]
    # [N, Ho, Wo, G, kh, kw, Cg] -> [N, Ho, kh, Wo, kw, G, Cg] -> [N, Ho·kh, Wo·kw, C]
    samples = tf.transpose(samples, [0, 1, 4, 2, 5, 3, 6])
    return tf.reshape(samples, [n, out_h * kh, out_w * kw, channels])


def deformable_conv2d(
    x,
    filter,
    offsets,
    strides=None,
    pads=None,
    data_format="NHWC",  # noqa: A002 - adapter name
    dilations=(1, 1, 1, 1),
    groups=1,
    deformable_groups=1,
    modulated=True,
    name=None,
):
    """npu_cube_ops.deformable_conv2d: a 2-D deformable convolution of x with filter [kh, kw, in_channels / groups,
    out_channels], offsets [N, out_h, out_w, 3·deformable_groups·kh·kw] (NHWC; NCHW: channels second)."""
    graph_mode_only("deformable_conv2d")
    check_choice("data_format", data_format, ("NHWC", "NCHW"))
    h_at, w_at = data_format.find("H"), data_format.find("W")
    layout = {}
    for argument, value in (("strides", strides), ("dilations", dilations)):
        values = check_int_list(argument, value, 4, 1)
        if values[data_format.find("N")] != 1 or values[data_format.find("C")] != 1:
            raise NpuOptionValueError(f"{argument} must be 1 in the N and C dimensions, got {list(value)}")
        layout[argument] = (values[h_at], values[w_at])
    pads = check_int_list("pads", pads, 4, 0)
    groups = check_int("groups", groups, 1)
    deformable_groups = check_int("deformable_groups", deformable_groups, 1)
    with tf.name_scope(name or "deformable_conv2d"):
        x, filter, offsets = (
            tf.convert_to_tensor(t, name=n) for t, n in ((x, "x"), (filter, "filter"), (offsets, "offsets"))
        )
        if data_format == "NCHW":
            x, offsets = tf.transpose(x, [0, 2, 3, 1]), tf.transpose(offsets, [0, 2, 3, 1])
        kh, kw, group_channels, out_channels = filter.shape.as_list()
        channels, offset_channels = x.shape[-1], offsets.shape[-1]
        if None in (kh, kw, group_channels, out_channels, channels):
            raise NpuOptionValueError(
                "deformable_conv2d needs the filter's shape and x's channels known when the "
                f"graph is built, got filter {filter.shape} and x {x.shape}"
            )
        if channels != group_channels * groups or out_channels % groups or channels % deformable_groups:
            raise NpuOptionValueError(
                f"x has {channels} channels: it must equal the filter's in_channels "
                f"({group_channels}) times groups ({groups}) and divide by "
                f"deformable_groups ({deformable_groups}), and out_channels "
                f"({out_channels}) must divide by groups"
            )
        taps = deformable_groups * kh * kw
        expected = [3 * taps] if modulated else [2 * taps, 3 * taps]
        if offset_channels is not None and offset_channels not in expected:
            blocks = "dx, dy and mask" if modulated else "dx and dy (and an ignored mask)"
            raise NpuOptionValueError(
                f"offsets must have {' or '.join(map(str, expected))} channels ({blocks}, "
                f"each deformable_groups x kh x kw), got {offset_channels}"
            )
        samples = _deformable_offsets(
            x, offsets, (kh, kw), layout["strides"], pads, layout["dilations"], deformable_groups, modulated
        )
        parts = zip(tf.split(samples, groups, axis=-1), tf.split(filter, groups, axis=-1))
        y = tf.concat([tf.nn.conv2d(s, f, strides=[1, kh, kw, 1], padding="VALID") for s, f in parts], axis=-1)
        return tf.transpose(y, [0, 3, 1, 2]) if data_format == "NCHW" else y


def randomchoicewithmask(x, count, seed=0, seed2=0):
    """npu_cpu_ops.randomchoicewithmask: (y [count, rank(x)] int32, mask [count] bool) drawn from x's true
    elements by TensorFlow's RandomShuffle with the same (seed, seed2)."""
    count = check_int("count", count, 0)
    with tf.name_scope("random_choice_with_mask"):
        x = tf.convert_to_tensor(x, name="x")
        if x.dtype != tf.bool or x.shape.rank == 0:
            raise NpuOptionTypeError(
                f"x must be a bool tensor of rank 1 or more, got {x.dtype.name} of shape {x.shape}"
            )
        seed, seed2 = _op_seeds(seed, seed2)
        chosen = tf.raw_ops.RandomShuffle(value=tf.cast(tf.where(x), tf.int32), seed=seed, seed2=seed2)
        found = tf.shape(chosen)[0]
        if count == 0:
            return chosen, tf.ones([found], tf.bool)
        chosen = chosen[:count]
        y = tf.pad(chosen, [[0, count - tf.shape(chosen)[0]], [0, 0]])
        y.set_shape([count, x.shape.rank])
        return y, tf.range(count) < found
