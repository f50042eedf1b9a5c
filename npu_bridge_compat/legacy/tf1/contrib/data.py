"""`tf.contrib.data`'s batching transformations that tf.data.experimental dropped (Dataset.batch took them over),
and TF 1.15's private thread pools for datasets (`tensorflow.python.data.experimental.ops.threadpool`), which
tf.data.Options took over."""

from __future__ import annotations


def batch_and_drop_remainder(batch_size):
    """A transformation for `Dataset.apply`: batches of `batch_size`, the last partial batch dropped."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size, padded_shapes, padding_values=None):
    """`batch_and_drop_remainder` with padding, as `Dataset.padded_batch(..., drop_remainder=True)`."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values, drop_remainder=True)


class PrivateThreadPool:
    """A dedicated thread pool for a dataset's work: `num_threads` threads (TF 1.15's threadpool module)."""

    def __init__(self, num_threads: int, display_name: str | None = None, max_intra_op_parallelism: int = 1) -> None:
        if num_threads < 1:
            raise ValueError(f"num_threads must be at least 1 (got {num_threads})")
        self.num_threads = num_threads
        self.display_name = display_name
        self.max_intra_op_parallelism = max_intra_op_parallelism


def override_threadpool(dataset, thread_pool: PrivateThreadPool):
    """`dataset` run on `thread_pool`: tf.data's own private thread pool of that many threads
    (`Options.threading`)."""
    import tensorflow as tf

    options = tf.data.Options()
    options.threading.private_threadpool_size = thread_pool.num_threads
    options.threading.max_intra_op_parallelism = thread_pool.max_intra_op_parallelism
    return dataset.with_options(options)
