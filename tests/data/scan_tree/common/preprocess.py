"""Input helpers of a port written for NumPy < 1.24 and Python 3.7."""

import collections
import imp

import numpy as np


def load_config(path):
    return imp.load_source("config", path)


def as_features(batch):
    if isinstance(batch, collections.Mapping):
        batch = list(batch.values())
    return np.asarray(batch, dtype=np.float)
