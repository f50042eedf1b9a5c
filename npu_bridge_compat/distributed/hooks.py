"""Every rank starts from the root rank's weights: the adapter's broadcast hook (Estimator, sessions) and
callback (Keras). With one rank both do nothing, as on Ascend."""

from __future__ import annotations

import tensorflow as tf

from npu_bridge_compat.distributed import collectives, ranks


def broadcast_global_variables(root_rank: int = 0, variables=None):
    """An op assigning to each variable (the trainable ones by default, as the adapter's) its value on
    `root_rank`."""
    chosen = tf.compat.v1.trainable_variables() if variables is None else list(variables)
    if not chosen:
        return tf.no_op()
    received = collectives.broadcast([v.value() if hasattr(v, "value") else v for v in chosen], root_rank)
    return tf.group([tf.compat.v1.assign(variable, value) for variable, value in zip(chosen, received)])


class NPUBroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Broadcasts the trainable variables from `root_rank` once the session exists (after initialisation or a
    checkpoint restore), when there are several ranks."""

    def __init__(self, root_rank: int | None = None, index: int | None = None) -> None:
        self._root_rank = 0 if root_rank is None else root_rank
        self._index = index
        self._broadcast = None

    def begin(self) -> None:
        graph = tf.compat.v1.get_default_graph()
        if ranks.rank_size() > 1 and (self._broadcast is None or self._broadcast.graph is not graph):
            self._broadcast = broadcast_global_variables(self._root_rank)

    def after_create_session(self, session, coord) -> None:
        if ranks.rank_size() > 1:
            session.run(self._broadcast)


class NPUBroadcastGlobalVariablesCallback(tf.keras.callbacks.Callback):
    """Broadcasts the model's variables from `root_rank` at the first batch, when there are several ranks."""

    def __init__(self, root_rank: int = 0) -> None:
        super().__init__()
        self.root_rank = root_rank
        self.broadcast_done = False

    def on_batch_begin(self, batch, logs=None) -> None:
        if self.broadcast_done:
            return
        if ranks.rank_size() > 1:
            if tf.executing_eagerly():
                for variable, value in zip(
                    self.model.variables, collectives.broadcast(list(self.model.variables), self.root_rank)
                ):
                    variable.assign(value)
            else:  # graph-mode Keras (TF2 behaviour off): its session runs the op
                tf.compat.v1.keras.backend.get_session().run(
                    broadcast_global_variables(self.root_rank, self.model.variables)
                )
        self.broadcast_done = True


def npu_hooks_append(hooks_list=()) -> list:
    """The adapter's helper: the list with the broadcast hook appended."""
    hooks = hooks_list if isinstance(hooks_list, list) else []
    hooks.append(NPUBroadcastGlobalVariablesHook(0, ranks.rank_id()))
    return hooks


def npu_callbacks_append(callbacks_list=None) -> list:
    """The adapter's helper: the list with the broadcast callback appended."""
    callbacks = [] if callbacks_list is None else callbacks_list
    callbacks.append(NPUBroadcastGlobalVariablesCallback(0))
    return callbacks
