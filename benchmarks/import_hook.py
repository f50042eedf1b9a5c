"""The cost of `run`'s import hook: a program that imports TensorFlow, Keras and a ModelZoo model's own modules,
started with plain `python` and with `python -m npu_bridge_compat run --tf2`, rounds alternating. Reported side by
side: the whole process's wall time, and the time the program's own imports of the model's modules take (every
`import tensorflow` in them goes through the hook), and, per statement, the program's own import statements of
modules already loaded (the hook's own cost, without the model's import-time computation: the Transformer's
tokenizer builds its character tables when imported). The model is TF official models' Transformer as ModelZoo's
TensorFlow2/ carries it, copied to a temporary folder (the modules of it that plain `python` imports too). On a
loaded machine, read the per-statement figure: the others carry the model's computation and the machine's noise.

From TensorFlow 2.16 `run` makes tf.keras Keras 2 (tf_keras, TF_USE_LEGACY_KERAS=1), which ported programs are
written for, where plain `python` loads Keras 3: there a third process, plain `python` with TF_USE_LEGACY_KERAS=1,
does the same work as `run`'s, and the hook's cost is `run` over it.

npu_bridge_compat's modules are compiled to bytecode first, as an installed package's are (an editable install
where PYTHONDONTWRITEBYTECODE is set would otherwise compile them from source at every start, which is no cost of
the hook).

    python benchmarks/import_hook.py --modelzoo PATH [--rounds 5]    # or NPU_BRIDGE_COMPAT_MODELZOO=PATH
"""

import argparse
import compileall
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import npu_bridge_compat

FOLDER = "TensorFlow2/built-in/nlp/Transformer_ID0633_for_TensorFlow2.X/transformer"
MODULES = (
    "official.nlp.transformer.misc",
    "official.nlp.transformer.optimizer",
    "official.nlp.transformer.metrics",
    "official.nlp.transformer.model_utils",
    "official.nlp.transformer.embedding_layer",
    "official.nlp.transformer.beam_search_v1",
    "official.nlp.transformer.model_params",
    "official.nlp.transformer.compute_bleu",
    "official.modeling.tf_utils",
    "official.modeling.activations",
)
PROBE = """import json, time
started = time.perf_counter()
import tensorflow as tf
from tensorflow import keras
frameworks = time.perf_counter()
{imports}
ended = time.perf_counter()
for _ in range(2000):
{statements}
repeated = time.perf_counter() - ended
print("TIMES " + json.dumps({{"frameworks_s": frameworks - started, "model_s": ended - frameworks,
                             "statement_us": repeated / 2000 / {count} * 1e6}}))
"""
STATEMENTS = (  # import statements of ported programs, of modules loaded by then
    "import os",
    "import numpy as np",
    "import tensorflow as tf",
    "from tensorflow import keras",
    "from tensorflow.keras import layers",
    "from tensorflow.python.ops import math_ops",
    "import official.modeling.tf_utils",
)
PLAIN, SAME_KERAS, SERVED = "python", "python, TF_USE_LEGACY_KERAS=1", "run --tf2"
COMMANDS = {  # name -> (command, environment added)
    PLAIN: ([sys.executable], {}),
    SAME_KERAS: ([sys.executable], {"TF_USE_LEGACY_KERAS": "1"}),
    SERVED: ([sys.executable, "-m", "npu_bridge_compat", "run", "--tf2"], {}),
}


def run_selects_keras_2() -> bool:
    """Whether `run` makes tf.keras Keras 2 where plain `python` gets Keras 3 (TensorFlow 2.16 and later)."""
    from npu_bridge_compat.compat.versions import ESTIMATOR_TENSORFLOW, tensorflow_version, version_tuple

    return version_tuple(tensorflow_version()) > version_tuple(ESTIMATOR_TENSORFLOW)


def one_run(command: list[str], added: dict[str, str], probe: str, folder: str) -> dict:
    began = time.perf_counter()
    result = subprocess.run(
        [*command, probe],
        cwd=folder,
        capture_output=True,
        text=True,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **added},
        check=False,
    )
    wall = time.perf_counter() - began
    lines = [line for line in result.stdout.splitlines() if line.startswith("TIMES ")]
    if result.returncode != 0 or not lines:
        raise SystemExit(f"{' '.join(command)} {probe} failed:\n{result.stderr[-2000:]}")
    return {"process_s": wall, **json.loads(lines[-1][len("TIMES ") :])}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--modelzoo", default=os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO"))
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    if arguments.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {arguments.rounds}")
    if arguments.modelzoo is None:
        parser.error("--modelzoo: name a ModelZoo-TensorFlow checkout (or set NPU_BRIDGE_COMPAT_MODELZOO)")
    source = os.path.join(arguments.modelzoo, FOLDER)
    if not os.path.isdir(source):
        parser.error(f"--modelzoo {arguments.modelzoo}: no {FOLDER} there (a checkout of ModelZoo-TensorFlow)")
    compileall.compile_dir(os.path.dirname(npu_bridge_compat.__file__), quiet=1)
    with tempfile.TemporaryDirectory() as folder:
        shutil.copytree(os.path.join(source, "official"), os.path.join(folder, "official"))
        probe = os.path.join(folder, "probe.py")
        with open(probe, "w") as file:
            file.write(
                PROBE.format(
                    imports="\n".join(f"import {module}" for module in MODULES),
                    statements="\n".join(f"    {statement}" for statement in STATEMENTS),
                    count=len(STATEMENTS),
                )
            )
        compared = [PLAIN, SAME_KERAS, SERVED] if run_selects_keras_2() else [PLAIN, SERVED]
        times: dict[str, list[dict]] = {name: [] for name in compared}
        for _ in range(arguments.rounds):
            for name in compared:
                times[name].append(one_run(*COMMANDS[name], probe, folder))
    medians = {
        name: {key: round(statistics.median(run[key] for run in runs), 3) for key in runs[0]}
        for name, runs in times.items()
    }
    result = {"model": FOLDER, "modules": len(MODULES), "rounds": arguments.rounds, "median": medians}
    for baseline in compared[:-1]:
        result[f"run over {baseline}"] = ratios(medians[SERVED], medians[baseline])
    print(json.dumps(result, indent=1))


def ratios(served: dict, plain: dict) -> dict:
    return {
        "process": round(served["process_s"] / plain["process_s"], 3),
        "model_modules": round(served["model_s"] / plain["model_s"], 3),
        "import_statement": round(served["statement_us"] / plain["statement_us"], 3),
    }


if __name__ == "__main__":
    main()
