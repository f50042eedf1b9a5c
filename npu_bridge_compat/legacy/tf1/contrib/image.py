"""`tf.contrib.image`'s projective transforms and YIQ colour distortions, on TensorFlow 2.15's own kernels.

A transform is TF 1.15's 8-vector [a0, a1, a2, b0, b1, b2, c0, c1]: output pixel (x, y) samples the input at
((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k) with k = c0 x + c1 y + 1; pixels mapped outside are zero.
"""

from __future__ import annotations

import tensorflow as tf


def _as_batch(images):
    """Images as a rank-4 batch, and a function giving results back the caller's rank (2, 3 or 4)."""
    images = tf.convert_to_tensor(images, name="images")
    rank = images.shape.rank
    if rank not in (2, 3, 4):
        raise ValueError(f"images must have rank 2, 3 or 4 (HW, HWC or NHWC), got rank {rank}")
    batch = {2: images[None, :, :, None], 3: images[None], 4: images}[rank]
    restore = {2: lambda out: out[0, :, :, 0], 3: lambda out: out[0], 4: lambda out: out}[rank]
    return batch, restore


def transform(images, transforms, interpolation: str = "NEAREST", output_shape=None, name=None):
    """Apply one projective transform per image (`transforms` [8] or [N, 8]); NEAREST or BILINEAR sampling."""
    if interpolation.upper() not in ("NEAREST", "BILINEAR"):
        raise ValueError(f"interpolation must be 'NEAREST' or 'BILINEAR', got {interpolation!r}")
    with tf.name_scope(name or "transform"):
        batch, restore = _as_batch(images)
        transforms = tf.convert_to_tensor(transforms, tf.float32, name="transforms")
        if transforms.shape.rank == 1:
            transforms = transforms[None]
        elif transforms.shape.rank != 2:
            raise ValueError(f"transforms must have rank 1 or 2, got rank {transforms.shape.rank}")
        shape = tf.shape(batch)[1:3] if output_shape is None else tf.convert_to_tensor(output_shape, tf.int32)
        output = tf.raw_ops.ImageProjectiveTransformV2(
            images=batch,
            transforms=transforms,
            output_shape=shape,
            interpolation=interpolation.upper(),
            fill_mode="CONSTANT",
        )
        return restore(output)


def angles_to_projective_transforms(angles, image_height, image_width, name=None):
    """The transforms that rotate images counterclockwise by `angles` (radians) about their centre."""
    with tf.name_scope(name or "angles_to_projective_transforms"):
        angles = tf.convert_to_tensor(angles, tf.float32)
        batch = angles if angles.shape.rank == 1 else angles[None]
        width, height = tf.cast(image_width, tf.float32) - 1, tf.cast(image_height, tf.float32) - 1
        cos, sin = tf.cos(batch), tf.sin(batch)
        x_offset = (width - (cos * width - sin * height)) / 2.0
        y_offset = (height - (sin * width + cos * height)) / 2.0
        zeros = tf.zeros_like(batch)
        return tf.stack([cos, -sin, x_offset, sin, cos, y_offset, zeros, zeros], axis=1)


def rotate(images, angles, interpolation: str = "NEAREST", name=None):
    """Rotate images counterclockwise by `angles` radians (a scalar, or one per image)."""
    with tf.name_scope(name or "rotate"):
        batch, restore = _as_batch(images)
        shape = tf.shape(batch)
        transforms = angles_to_projective_transforms(angles, shape[1], shape[2])
        return restore(transform(batch, transforms, interpolation))


def translations_to_projective_transforms(translations, name=None):
    """The transforms that move images by [dx, dy] (one pair, or one per image)."""
    with tf.name_scope(name or "translations_to_projective_transforms"):
        translations = tf.convert_to_tensor(translations, tf.float32)
        if translations.shape.rank == 1:
            translations = translations[None]
        ones, zeros = tf.ones_like(translations[:, 0]), tf.zeros_like(translations[:, 0])
        return tf.stack([ones, zeros, -translations[:, 0], zeros, ones, -translations[:, 1], zeros, zeros], axis=1)


def translate(images, translations, interpolation: str = "NEAREST", name=None):
    """Move images by `translations` ([dx, dy] pixels, one pair or one per image)."""
    with tf.name_scope(name or "translate"):
        return transform(images, translations_to_projective_transforms(translations), interpolation)


def flat_transforms_to_matrices(transforms):
    """[N, 8] transforms as [N, 3, 3] matrices."""
    transforms = tf.reshape(tf.convert_to_tensor(transforms, tf.float32), [-1, 8])
    return tf.reshape(tf.concat([transforms, tf.ones_like(transforms[:, :1])], axis=1), [-1, 3, 3])


def matrices_to_flat_transforms(transform_matrices):
    """[N, 3, 3] matrices as [N, 8] transforms (normalised so that the last entry is 1)."""
    matrices = tf.reshape(tf.convert_to_tensor(transform_matrices, tf.float32), [-1, 9])
    return matrices[:, :8] / matrices[:, 8:9]


def compose_transforms(*transforms):
    """One transform doing the given ones in turn (the first applied to the output coordinates first)."""
    if not transforms:
        raise ValueError("compose_transforms needs at least one transform")
    composed = flat_transforms_to_matrices(transforms[0])
    for following in transforms[1:]:
        composed = tf.matmul(composed, flat_transforms_to_matrices(following))
    return matrices_to_flat_transforms(composed)


def adjust_hsv_in_yiq(image, delta_hue: float = 0, scale_saturation: float = 1, scale_value: float = 1, name=None):
    """Rotate the hue (radians) and scale saturation and value of RGB images, in YIQ space."""
    with tf.name_scope(name or "adjust_hsv_in_yiq"):
        image = tf.convert_to_tensor(image, name="image")
        rgb = tf.image.convert_image_dtype(image, tf.float32)
        yiq = tf.image.rgb_to_yiq(rgb)
        delta_hue = tf.cast(delta_hue, tf.float32)
        chroma = tf.cast(scale_saturation, tf.float32) * tf.cast(scale_value, tf.float32)
        cos, sin = chroma * tf.cos(delta_hue), chroma * tf.sin(delta_hue)
        y, i, q = tf.unstack(yiq, axis=-1)
        adjusted = tf.stack([tf.cast(scale_value, tf.float32) * y, cos * i - sin * q, sin * i + cos * q], axis=-1)
        return tf.image.convert_image_dtype(tf.image.yiq_to_rgb(adjusted), image.dtype, saturate=True)


def random_hsv_in_yiq(
    image,
    max_delta_hue: float = 0,
    lower_saturation: float = 1,
    upper_saturation: float = 1,
    lower_value: float = 1,
    upper_value: float = 1,
    seed=None,
):
    """`adjust_hsv_in_yiq` with a hue delta drawn from [-max_delta_hue, max_delta_hue] and saturation and value
    scales from [lower, upper]."""
    if max_delta_hue < 0:
        raise ValueError(f"max_delta_hue must be non-negative, got {max_delta_hue}")
    for lower, upper, what in ((lower_saturation, upper_saturation, "saturation"), (lower_value, upper_value, "value")):
        if lower < 0 or upper < lower:
            raise ValueError(f"need 0 <= lower_{what} <= upper_{what}, got {lower} and {upper}")
    delta_hue = tf.random.uniform([], -max_delta_hue, max_delta_hue, seed=seed) if max_delta_hue else 0.0
    saturation = tf.random.uniform([], lower_saturation, upper_saturation, seed=seed)
    value = tf.random.uniform([], lower_value, upper_value, seed=seed)
    return adjust_hsv_in_yiq(image, delta_hue, saturation, value)
