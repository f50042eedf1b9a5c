"""`tf.contrib.learn.ModeKeys`: the Estimator mode keys under their contrib.learn names (INFER is PREDICT)."""

from __future__ import annotations


class ModeKeys:
    """TRAIN, EVAL and INFER ("infer", the value of tf.estimator.ModeKeys.PREDICT, which is here too). Plain
    strings, as tf.estimator's: they serve where TensorFlow has no tf.estimator (2.16 and later) as well."""

    TRAIN = "train"
    EVAL = "eval"
    PREDICT = INFER = "infer"
