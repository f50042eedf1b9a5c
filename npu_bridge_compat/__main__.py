"""Entry point of `python -m npu_bridge_compat`."""

import os
import sys

# The CLI prints reports; TensorFlow's start-up INFO lines would only bury them.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from npu_bridge_compat.cli import main  # noqa: E402 - after the logging default above

sys.exit(main())
