"""`python -m npu_bridge_compat.processes SCRIPT ARGS`: a script of a command under `run`, started by the hook."""

import sys

from npu_bridge_compat.processes.child import run_child

sys.exit(run_child(sys.argv[1:]))
