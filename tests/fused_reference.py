"""Independent NumPy references of the Ascend fused kernels' documented formulas, written step by step (loops
over time and positions), for the fused-op tests to compare against."""

from __future__ import annotations

import numpy as np


def sigmoid(value):
    return 1.0 / (1.0 + np.exp(-value))


def lstm(x, w, b, init_h, init_c, lengths=None, forget_bias=0.0, cell_clip=-1.0, peephole=None, reverse=False):
    """The Ascend LSTM kernel unrolled by hand over time-major x: gate blocks i, j, f, o; steps at or past a
    sequence's length keep the state and output y = 0. Returns a dict of [T, B, H] arrays."""
    steps, batch = x.shape[:2]
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    wci, wcf, wco = peephole if peephole is not None else (0.0, 0.0, 0.0)
    h, c = init_h.astype(np.float64), init_c.astype(np.float64)
    names = ("y", "output_h", "output_c", "i", "j", "f", "o", "tanhc")
    out = {name: np.zeros((steps, batch, h.shape[1])) for name in names}
    for t in range(steps - 1, -1, -1) if reverse else range(steps):
        gates = np.concatenate([x[t], h], axis=1) @ w + b
        i, j, f, o = np.split(gates, 4, axis=1)
        i, f = sigmoid(i + wci * c), sigmoid(f + forget_bias + wcf * c)
        j = np.tanh(j)
        c_next = f * c + i * j
        if cell_clip > 0:
            c_next = np.clip(c_next, -cell_clip, cell_clip)
        o = sigmoid(o + wco * c_next)
        h_next = o * np.tanh(c_next)
        inside = (t < lengths)[:, None]
        h, c = np.where(inside, h_next, h), np.where(inside, c_next, c)
        for name, value in zip(names, (h_next * inside, h, c, i, j, f, o, np.tanh(c_next))):
            out[name][t] = value
    out["inside"] = np.arange(steps)[:, None] < lengths[None, :]
    return out


def gru(
    x,
    weight_input,
    weight_hidden,
    bias_input,
    bias_hidden,
    init_h,
    lengths=None,
    attention=None,
    gate_order="zrh",
    reset_after=True,
):
    """DynamicGRUV2 / DynamicAUGRU unrolled by hand: h' = u·h + (1 - u)·new with u = (1 - a)·z."""
    steps, batch = x.shape[:2]
    hidden = init_h.shape[1]
    lengths = np.full(batch, steps) if lengths is None else np.asarray(lengths)
    attention = np.zeros((steps, batch)) if attention is None else attention
    z_at, r_at = (0, 1) if gate_order == "zrh" else (1, 0)

    def block(matrix, k):
        return matrix[..., k * hidden : (k + 1) * hidden]

    h = init_h.astype(np.float64)
    names = ("y", "output_h", "update", "update_att", "reset", "new", "hidden_new")
    out = {name: np.zeros((steps, batch, hidden)) for name in names}
    for t in range(steps):
        x_part = x[t] @ weight_input + bias_input
        h_part = h @ weight_hidden + bias_hidden
        z = sigmoid(block(x_part, z_at) + block(h_part, z_at))
        r = sigmoid(block(x_part, r_at) + block(h_part, r_at))
        if reset_after:
            hidden_new = block(h_part, 2)
            new = np.tanh(block(x_part, 2) + r * hidden_new)
        else:
            hidden_new = (r * h) @ block(weight_hidden, 2) + block(bias_hidden, 2)
            new = np.tanh(block(x_part, 2) + hidden_new)
        u = (1 - attention[t][:, None]) * z
        h_next = u * h + (1 - u) * new
        inside = (t < lengths)[:, None]
        h = np.where(inside, h_next, h)
        for name, value in zip(names, (h_next * inside, h, z, u, r, new, hidden_new)):
            out[name][t] = value
    out["inside"] = np.arange(steps)[:, None] < lengths[None, :]
    return out


def bilinear(image, row, col):
    """image [H, W] at a float position, zero outside."""
    height, width = image.shape
    top, left = int(np.floor(row)), int(np.floor(col))
    value = 0.0
    for r, weight_r in ((top, 1 - (row - top)), (top + 1, row - top)):
        for c, weight_c in ((left, 1 - (col - left)), (left + 1, col - left)):
            if 0 <= r < height and 0 <= c < width:
                value += weight_r * weight_c * image[r, c]
    return value


def deformable_conv2d(x, filters, offsets, strides, pads, dilations, groups=1, deformable_groups=1, modulated=True):
    """NHWC deformable convolution by its definition: y[n, ho, wo, o] = Σ_{i, j, c} w[i, j, c, o] ·
    m · x(p0 + p_ij + Δp), offsets laid out as (Δx block, Δy block, mask block) of deformable_groups·kh·kw."""
    batch, _, _, channels = x.shape
    kh, kw, group_channels, out_channels = filters.shape
    out_h, out_w = offsets.shape[1:3]
    taps = deformable_groups * kh * kw
    per_group = channels // deformable_groups
    y = np.zeros((batch, out_h, out_w, out_channels))
    for n in range(batch):
        for ho in range(out_h):
            for wo in range(out_w):
                for i in range(kh):
                    for j in range(kw):
                        for c in range(channels):
                            k = (c // per_group) * kh * kw + i * kw + j
                            dx, dy = offsets[n, ho, wo, k], offsets[n, ho, wo, taps + k]
                            mask = offsets[n, ho, wo, 2 * taps + k] if modulated else 1.0
                            row = ho * strides[0] - pads[0] + i * dilations[0] + dy
                            col = wo * strides[1] - pads[2] + j * dilations[1] + dx
                            sample = mask * bilinear(x[n, :, :, c], row, col)
                            group = c // group_channels
                            outs = range(group * out_channels // groups, (group + 1) * out_channels // groups)
                            for o in outs:
                                y[n, ho, wo, o] += filters[i, j, c % group_channels, o] * sample
    return y


def lars(weight, grad, weight_decay, hyperpara=0.001, epsilon=1e-5, learning_rate=None, use_clip=False):
    weight_norm, grad_norm = np.linalg.norm(weight), np.linalg.norm(grad)
    coeff = hyperpara * weight_norm / (grad_norm + weight_decay * weight_norm + epsilon)
    if use_clip:
        coeff = min(max(coeff / learning_rate, 0.0), 1.0)
    return coeff * (grad + weight_decay * weight)


def adam_apply_one(grad, v, m, var, lr, beta1, beta2, epsilon, decay=0.0):
    v = beta2 * v + (1 - beta2) * grad**2
    m = beta1 * m + (1 - beta1) * grad
    var = var - lr * (m / (np.sqrt(v) + epsilon) + decay * var)
    return v, m, var


def lamb_step(grad, v, m, param, lr, beta1, beta2, epsilon, step, weight_decay):
    """One LAMB step as BERT's optimizer writes it: Adam's unbiased update plus decay, scaled by the trust ratio."""
    v = beta2 * v + (1 - beta2) * grad**2
    m = beta1 * m + (1 - beta1) * grad
    update = (m / (1 - beta1**step)) / (np.sqrt(v / (1 - beta2**step)) + epsilon) + weight_decay * param
    w_norm, g_norm = np.linalg.norm(param), np.linalg.norm(update)
    ratio = w_norm / g_norm if w_norm > 0 and g_norm > 0 else 1.0
    return v, m, param - ratio * lr * update
