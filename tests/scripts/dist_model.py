"""The tiny model the dist_* scripts train on several ranks, and that the tests retrain in one process.

Rank r of S reads `dataset(r, S)`: the examples r, r + S, r + 2S, ... in batches of BATCH. Batch t of all ranks
together is batch t of `dataset(0, 1, BATCH * S)`, so averaging the ranks' gradients is training one process on the
concatenated batches.
"""

import numpy as np
import tensorflow.compat.v1 as v1  # not `import tensorflow`: `run --tf1` leaves this import alone

BATCH = 4
LEARNING_RATE = 0.1
FEATURES = np.random.RandomState(0).randn(1024, 4).astype(np.float32)
LABELS = FEATURES @ np.array([[1.0], [-2.0], [0.5], [3.0]], np.float32) + np.float32(0.1)


def dataset(rank, size, batch=BATCH):
    return (
        v1.data.Dataset.from_tensor_slices((FEATURES, LABELS))
        .shard(size, rank)
        .batch(batch, drop_remainder=True)
        .repeat()
    )


def loss_of(features, labels, seed):
    """A two-layer perceptron's mean squared error; its initial weights are drawn with `seed`. (Plain variables
    and matmuls: TF1 layers are not on every TensorFlow line.)"""

    def dense(inputs, units, name, kernel_seed, bias):
        with v1.variable_scope(name):
            kernel = v1.get_variable(
                "kernel", [inputs.shape[-1], units], initializer=v1.glorot_uniform_initializer(seed=kernel_seed)
            )
            offset = v1.get_variable("bias", [units], initializer=v1.constant_initializer(bias))
        return v1.matmul(inputs, kernel) + offset

    hidden = v1.nn.relu(dense(features, 8, "hidden", seed, 0.0))
    return v1.losses.mean_squared_error(labels, dense(hidden, 1, "output", seed + 1, 0.01 * seed))


def weights(session) -> dict:
    """The trainable variables' values, by name, as lists (what the scripts print)."""
    variables = v1.trainable_variables()
    return {v.op.name: value.tolist() for v, value in zip(variables, session.run(variables))}


def reference(steps: int, size: int, initial: list | None = None) -> dict:
    """The weights after `steps` steps of one process on the concatenated batches of `size` ranks, from rank 0's
    initial weights, or from `initial` (one list per weight, in the model's order: hidden kernel and bias,
    output kernel and bias)."""
    with v1.Graph().as_default():
        features, labels = v1.data.make_one_shot_iterator(dataset(0, 1, BATCH * size)).get_next()
        loss = loss_of(features, labels, seed=0)
        train = v1.train.GradientDescentOptimizer(LEARNING_RATE).minimize(loss)
        with v1.Session() as session:
            session.run(v1.global_variables_initializer())
            if initial is not None:
                session.run(
                    [v.assign(np.array(value, np.float32)) for v, value in zip(v1.trainable_variables(), initial)]
                )
            for _ in range(steps):
                session.run(train)
            return weights(session)
