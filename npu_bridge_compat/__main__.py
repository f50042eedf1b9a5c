"""Entry point of `python -m npu_bridge_compat`."""

import os
import sys

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner

if "TF_CPP_MIN_LOG_LEVEL" not in os.environ:
    changes.set_environment(
        "TF_CPP_MIN_LOG_LEVEL",
        "1",
        owner=Owner.MAIN_MODULE,
        reason="the commands print reports; TensorFlow's start-up INFO lines would only bury them",
    )

from npu_bridge_compat.cli import main  # noqa: E402 - after the logging default above

sys.exit(main())
