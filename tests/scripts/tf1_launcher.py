"""A launcher as ported programs often have: it runs the training script beside it with runpy."""

import os
import runpy
import sys

script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf1_sibling_train.py")
sys.argv = [script, *sys.argv[1:]]
runpy.run_path(script, run_name="__main__")
