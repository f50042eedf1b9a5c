"""TF 1.15's MNIST reader (`tensorflow.examples.tutorials.mnist.input_data`, `contrib.learn...datasets.mnist`),
reading local files only.

`read_data_sets(train_dir)` reads the four MNIST files (gzip-compressed as published, or uncompressed) from
`train_dir` and never downloads: an absent file is a FileNotFoundError naming it. Batches shuffle with each
DataSet's own random state (seeded by `seed`) rather than by reseeding numpy's global one.
"""

from __future__ import annotations

import collections
import contextlib
import gzip
import os
from typing import IO

import numpy as np

__all__ = [
    "DataSet",
    "Datasets",
    "dense_to_one_hot",
    "extract_images",
    "extract_labels",
    "load_mnist",
    "read_data_sets",
]

TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
_IMAGES_MAGIC, _LABELS_MAGIC = 2051, 2049

Datasets = collections.namedtuple("Datasets", ["train", "validation", "test"])


def _read32(stream: IO[bytes]) -> int:
    return int(np.frombuffer(stream.read(4), dtype=">u4")[0])


def _check_magic(stream: IO[bytes], expected: int, what: str) -> None:
    magic = _read32(stream)
    if magic != expected:
        raise ValueError(f"Invalid magic number {magic} in MNIST {what} file: {getattr(stream, 'name', stream)}")


def _decompressed(f: IO[bytes]):
    """A context giving the stream's bytes, decompressed when it is gzip data (the stream is left open)."""
    start = f.tell()
    compressed = f.read(2) == b"\x1f\x8b"
    f.seek(start)
    return gzip.GzipFile(fileobj=f) if compressed else contextlib.nullcontext(f)


def extract_images(f: IO[bytes]) -> np.ndarray:
    """The images of an (uncompressed or gzip) idx3 stream as uint8 [count, rows, columns, 1]."""
    with _decompressed(f) as stream:
        _check_magic(stream, _IMAGES_MAGIC, "image")
        count, rows, columns = _read32(stream), _read32(stream), _read32(stream)
        data = np.frombuffer(stream.read(rows * columns * count), dtype=np.uint8)
        return data.reshape(count, rows, columns, 1)


def extract_labels(f: IO[bytes], one_hot: bool = False, num_classes: int = 10) -> np.ndarray:
    """The labels of an idx1 stream as uint8 [count] (or one-hot [count, num_classes])."""
    with _decompressed(f) as stream:
        _check_magic(stream, _LABELS_MAGIC, "label")
        labels = np.frombuffer(stream.read(_read32(stream)), dtype=np.uint8)
        return dense_to_one_hot(labels, num_classes) if one_hot else labels


def dense_to_one_hot(labels_dense: np.ndarray, num_classes: int) -> np.ndarray:
    one_hot = np.zeros((labels_dense.shape[0], num_classes), dtype=np.float64)
    one_hot[np.arange(labels_dense.shape[0]), labels_dense.ravel()] = 1
    return one_hot


class DataSet:
    """Images and labels in memory, served in shuffled batches epoch after epoch."""

    def __init__(
        self,
        images,
        labels,
        fake_data: bool = False,
        one_hot: bool = False,
        dtype=np.float32,
        reshape: bool = True,
        seed=None,
    ) -> None:
        dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
        if dtype not in (np.uint8, np.float32):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        self._random = np.random.RandomState(seed)
        self._fake_data, self.one_hot = fake_data, one_hot
        if fake_data:
            self._num_examples = 10000
        else:
            if images.shape[0] != labels.shape[0]:
                raise ValueError(f"images.shape: {images.shape} labels.shape: {labels.shape}")
            self._num_examples = images.shape[0]
            if reshape:
                if images.shape[3] != 1:
                    raise ValueError(f"reshape needs single-channel images, got shape {images.shape}")
                images = images.reshape(images.shape[0], images.shape[1] * images.shape[2])
            if dtype == np.float32:
                images = images.astype(np.float32) * (1.0 / 255.0)
        self._images, self._labels = images, labels
        self._epochs_completed = 0
        self._index_in_epoch = 0

    images = property(lambda self: self._images)
    labels = property(lambda self: self._labels)
    num_examples = property(lambda self: self._num_examples)
    epochs_completed = property(lambda self: self._epochs_completed)

    def _shuffle(self) -> None:
        order = self._random.permutation(self._num_examples)
        self._images, self._labels = self._images[order], self._labels[order]

    def next_batch(self, batch_size: int, fake_data: bool = False, shuffle: bool = True):
        """The next `batch_size` examples; an epoch's last batch is completed from the next (reshuffled) epoch."""
        if fake_data:
            image = [1] * 784
            label = [1] + [0] * 9 if self.one_hot else 0
            return [image] * batch_size, [label] * batch_size
        start = self._index_in_epoch
        if self._epochs_completed == 0 and start == 0 and shuffle:
            self._shuffle()
        if start + batch_size <= self._num_examples:
            self._index_in_epoch += batch_size
            return self._images[start : self._index_in_epoch], self._labels[start : self._index_in_epoch]
        self._epochs_completed += 1
        rest_images, rest_labels = self._images[start:], self._labels[start:]
        if shuffle:
            self._shuffle()
        self._index_in_epoch = batch_size - len(rest_images)
        end = self._index_in_epoch
        return (np.concatenate((rest_images, self._images[:end])), np.concatenate((rest_labels, self._labels[:end])))


def _local_file(train_dir: str, name: str) -> str:
    for candidate in (name, name[: -len(".gz")]):
        path = os.path.join(train_dir, candidate)
        if os.path.isfile(path):
            return path
    raise FileNotFoundError(
        f"MNIST file {name} (or {name[: -len('.gz')]}) not found in {os.path.abspath(train_dir)}; "
        f"npu_bridge_compat reads local files only and downloads nothing: put {TRAIN_IMAGES}, "
        f"{TRAIN_LABELS}, {TEST_IMAGES} and {TEST_LABELS} there"
    )


def _read(train_dir: str, name: str, extract, **kwargs) -> np.ndarray:
    with open(_local_file(train_dir, name), "rb") as stream:
        return extract(stream, **kwargs)


def read_data_sets(
    train_dir: str,
    fake_data: bool = False,
    one_hot: bool = False,
    dtype=np.float32,
    reshape: bool = True,
    validation_size: int = 5000,
    seed=None,
    source_url=None,
) -> Datasets:
    """MNIST's train / validation / test DataSets from the files in `train_dir` (the first `validation_size`
    training examples form the validation set). `source_url` is accepted and ignored: nothing is downloaded."""
    options = {"dtype": dtype, "reshape": reshape, "seed": seed}
    if fake_data:

        def fake() -> DataSet:
            return DataSet([], [], fake_data=True, one_hot=one_hot, **options)

        return Datasets(train=fake(), validation=fake(), test=fake())
    train_images = _read(train_dir, TRAIN_IMAGES, extract_images)
    train_labels = _read(train_dir, TRAIN_LABELS, extract_labels, one_hot=one_hot)
    test_images = _read(train_dir, TEST_IMAGES, extract_images)
    test_labels = _read(train_dir, TEST_LABELS, extract_labels, one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. Received: {validation_size}.")
    return Datasets(
        train=DataSet(train_images[validation_size:], train_labels[validation_size:], **options),
        validation=DataSet(train_images[:validation_size], train_labels[:validation_size], **options),
        test=DataSet(test_images, test_labels, **options),
    )


def load_mnist(train_dir: str = "MNIST-data") -> Datasets:
    return read_data_sets(train_dir)
