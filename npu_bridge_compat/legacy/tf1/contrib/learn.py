"""`tf.contrib.learn.ModeKeys`: the Estimator mode keys under their contrib.learn names (INFER is PREDICT)."""

from __future__ import annotations

import tensorflow as tf


class ModeKeys(tf.estimator.ModeKeys):
    """TRAIN, EVAL and INFER ("infer", the value of tf.estimator.ModeKeys.PREDICT)."""

    INFER = tf.estimator.ModeKeys.PREDICT
