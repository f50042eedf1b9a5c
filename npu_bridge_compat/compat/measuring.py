"""What a timed run may carry besides its step, as TensorFlow records it (checked on TensorFlow 2.15 and 2.21).

- profiler_running: TensorFlow's profiler session (`tf.profiler.experimental.start` / `stop`, Keras' TensorBoard
  callback's profile_batch, this package's profiler unit) is held in profiler_v2's module global `_profiler`.
- checkpoint_writes: TF1 Savers and TF2 Checkpoints add each write's duration to TensorFlow's checkpoint metrics
  (api labels `saver_v1`, `checkpoint_v2`); the number of samples counts the writes.
- summary_event_writer: the class through which TF1 FileWriters (SummarySaverHook, StepCounterHook, the
  Estimator's summaries) hand each event to their writer thread (`add_event`).
"""

from __future__ import annotations

CHECKPOINT_API_LABELS = ("saver_v1", "checkpoint_v2")


def profiler_running() -> bool:
    """Whether TensorFlow's profiler is tracing now."""
    from tensorflow.python.profiler import profiler_v2

    return profiler_v2._profiler is not None


def checkpoint_writes() -> int:
    """How many checkpoints this process wrote so far (TF1 Savers and TF2 Checkpoints)."""
    from tensorflow.core.framework.summary_pb2 import HistogramProto
    from tensorflow.python.saved_model.pywrap_saved_model import metrics

    total = 0
    for label in CHECKPOINT_API_LABELS:
        histogram = HistogramProto()
        histogram.ParseFromString(metrics.GetCheckpointWriteDurations(api_label=label))
        total += int(histogram.num)
    return total


def summary_event_writer() -> type:
    """The class whose `add_event` every TF1 FileWriter calls once per summary event it writes."""
    from tensorflow.python.summary.writer.event_file_writer import EventFileWriter

    return EventFileWriter
