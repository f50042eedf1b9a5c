"""npu_bridge_compat's output among TensorFlow's and absl's logging.

- The translation report is one absl-logging record (tools and log files read it there). When logging would not
  show an INFO record (a script that never configured logging), the report is also printed to stderr, as a block.
- TensorFlow gives its logger a stderr handler of its own when the root logger has none at import time. Once
  absl's `app.run` (or `logging.basicConfig`, or absl's own first log call) configures the root logger, every
  TensorFlow message is printed twice. `defer_tensorflow_handler` (called by `run` and by every door as it enters
  its plan) applies TensorFlow's rule, "no handler of our own when the root logger is configured", to each message
  as it is emitted rather than only at TensorFlow's import (whichever of TensorFlow and npu_bridge_compat is
  imported first): a filter on TensorFlow's logger, which puts one on TensorFlow's own console handler once that
  exists. Both go through the changes registry; importing this module changes nothing.
- `quiet_library_deprecations` hides the deprecation notices libraries print about the code a ported script calls
  (TensorFlow's "is deprecated and will be removed" log lines, DeprecationWarning, Keras' legacy-layer
  warnings), through the registry too. `run` calls it unless asked not to (`--show-deprecations`); Python's own
  warning settings (`PYTHONWARNINGS`, `-W`) turn it off too.
"""

from __future__ import annotations

import logging
import sys

from absl import logging as absl_logging

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

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


class _DeferBeforeEachRecord(logging.Filter):
    """On TensorFlow's logger, consulted before its handlers: TensorFlow adds its handler when it is imported,
    which may be after the filter is."""

    def filter(self, record: logging.LogRecord) -> bool:
        _defer_console_handlers()
        return True


_DEFER = _DeferToRootHandlers()
_DEFER_BEFORE_EACH_RECORD = _DeferBeforeEachRecord()


def defer_tensorflow_handler() -> None:
    """Stop TensorFlow's private stderr handler from repeating what the root logger's handlers print, from now on
    (idempotent, through the changes registry; only TensorFlow's console handler is touched, never a handler a
    user added)."""
    changes.add_logging_filter(
        logging.getLogger(TENSORFLOW_LOGGER),
        _DEFER_BEFORE_EACH_RECORD,
        owner=Owner.LOGGING,
        reason="TensorFlow's own console handler defers to the root logger's (its messages are printed once)",
        label="logger 'tensorflow'",
    )
    _defer_console_handlers()


def _defer_console_handlers() -> None:
    for handler in logging.getLogger(TENSORFLOW_LOGGER).handlers:
        if type(handler) is logging.StreamHandler and handler.stream in (sys.stderr, sys.stdout):
            changes.add_logging_filter(
                handler,
                _DEFER,
                owner=Owner.LOGGING,
                reason="a record the root logger's handlers print is not printed again by TensorFlow's handler",
                label="TensorFlow's console handler",
            )


class _NotDeprecation(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "is deprecated" not in str(record.msg)


_NOT_DEPRECATION = _NotDeprecation()
# (what is hidden, the warnings filter's criteria)
_DEPRECATION_WARNINGS = (
    ("DeprecationWarning", {"category": DeprecationWarning}),
    ("PendingDeprecationWarning", {"category": PendingDeprecationWarning}),
    ("Keras' legacy-layer notices", {"message": r".*\bis deprecated\b", "category": UserWarning}),
    ("deprecation notices as FutureWarning", {"message": r".*\bis deprecated\b", "category": FutureWarning}),
)


def quiet_library_deprecations() -> None:
    """Hide library deprecation notices from now on (idempotent, through the changes registry), unless Python's
    warning settings were given (`PYTHONWARNINGS`, `-W`): then they rule. Errors, the translation report and
    npu_bridge_compat's own warnings still show."""
    if sys.warnoptions:
        return
    changes.add_logging_filter(
        logging.getLogger(TENSORFLOW_LOGGER),
        _NOT_DEPRECATION,
        owner=Owner.LOGGING,
        reason="TensorFlow's deprecation notices about the code a ported script calls are not shown",
        label="logger 'tensorflow'",
    )
    for what, criteria in _DEPRECATION_WARNINGS:
        changes.filter_warnings(
            "ignore", owner=Owner.LOGGING, reason=f"{what} about the code a ported script calls are hidden", **criteria
        )
