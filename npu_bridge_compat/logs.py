"""npu_bridge_compat's output among TensorFlow's and absl's logging.

- The translation report is one absl-logging record (tools and log files read it there). When logging would not
  show an INFO record (a script that never configured logging), the report is also printed to stderr, as a block.
- TensorFlow gives its logger a stderr handler of its own when the root logger has none at import time. Once
  absl's `app.run` (or `logging.basicConfig`, or absl's own first log call) configures the root logger, every
  TensorFlow message is printed twice. Importing this module applies TensorFlow's rule, "no handler of our own
  when the root logger is configured", to each message as it is emitted rather than only at TensorFlow's import
  (whichever of TensorFlow and npu_bridge_compat is imported first); nothing else about logging changes.
- `quiet_library_deprecations` hides the deprecation notices libraries print about the code a ported script calls
  (TensorFlow's "is deprecated and will be removed" log lines, DeprecationWarning, Keras' legacy-layer
  warnings). `run` calls it unless asked not to (`--show-deprecations`); Python's own warning settings
  (`PYTHONWARNINGS`, `-W`) turn it off too.
"""

from __future__ import annotations

import logging
import sys
import warnings

from absl import logging as absl_logging

TENSORFLOW_LOGGER = "tensorflow"
REPORT_TITLE = "npu_bridge_compat translation report"


def log_report(text: str) -> None:
    """Log the report through absl; print it to stderr as well when no handler would show it."""
    logger = absl_logging.get_absl_logger()  # the logger itself: absl.logging.info would call basicConfig()
    logger.info("%s\n%s", REPORT_TITLE, text)
    if not (logger.isEnabledFor(logging.INFO) and logger.hasHandlers()):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


def log_line(text: str) -> None:
    """Log one line through absl; print it to stderr as well when no handler would show it."""
    logger = absl_logging.get_absl_logger()
    logger.info("%s", text)
    if not (logger.isEnabledFor(logging.INFO) and logger.hasHandlers()):
        sys.stderr.write(text + "\n")
        sys.stderr.flush()


class _DeferToRootHandlers(logging.Filter):
    """On TensorFlow's own handler: let a record through only when the root logger will not print it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not logging.getLogger(TENSORFLOW_LOGGER).propagate:
            return True
        return not any(record.levelno >= handler.level for handler in logging.getLogger().handlers)


_DEFER = _DeferToRootHandlers()


def defer_tensorflow_handler() -> None:
    """Stop TensorFlow's private stderr handler from repeating what the root logger's handlers print
    (idempotent; only TensorFlow's console handler is touched, never a handler a user added)."""
    for handler in logging.getLogger(TENSORFLOW_LOGGER).handlers:
        console = type(handler) is logging.StreamHandler and handler.stream in (sys.stderr, sys.stdout)
        if console and _DEFER not in handler.filters:
            handler.addFilter(_DEFER)


class _DeferBeforeEachRecord(logging.Filter):
    """On TensorFlow's logger, consulted before its handlers: TensorFlow adds its handler when it is imported,
    which may be after this module is."""

    def filter(self, record: logging.LogRecord) -> bool:
        defer_tensorflow_handler()
        return True


_DEFER_BEFORE_EACH_RECORD = _DeferBeforeEachRecord()
if _DEFER_BEFORE_EACH_RECORD not in logging.getLogger(TENSORFLOW_LOGGER).filters:
    logging.getLogger(TENSORFLOW_LOGGER).addFilter(_DEFER_BEFORE_EACH_RECORD)


class _NotDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "is deprecated" not in str(record.msg)


_NOT_DEPRECATION = _NotDeprecation()


def quiet_library_deprecations() -> None:
    """Hide library deprecation notices for the rest of the process (idempotent), unless Python's warning
    settings were given (`PYTHONWARNINGS`, `-W`): then they rule. Errors, the translation report and
    npu_bridge_compat's own warnings still show."""
    if sys.warnoptions:
        return
    tensorflow_logger = logging.getLogger(TENSORFLOW_LOGGER)
    if _NOT_DEPRECATION not in tensorflow_logger.filters:
        tensorflow_logger.addFilter(_NOT_DEPRECATION)
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
    warnings.filterwarnings("ignore", message=r".*\bis deprecated\b", category=UserWarning)
    warnings.filterwarnings("ignore", message=r".*\bis deprecated\b", category=FutureWarning)
