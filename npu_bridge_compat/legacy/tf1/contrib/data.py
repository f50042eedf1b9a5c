"""`tf.contrib.data`'s batching transformations that tf.data.experimental dropped (Dataset.batch took them over)."""

from __future__ import annotations


def batch_and_drop_remainder(batch_size):
    """A transformation for `Dataset.apply`: batches of `batch_size`, the last partial batch dropped."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """`batch_and_drop_remainder` with padding, as `Dataset.padded_batch(..., drop_remainder=True)`."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values, drop_remainder=True)
