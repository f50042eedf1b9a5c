"""What mixed precision does to what a model learns: three real ported programs with allow_mix_precision, trained
on small synthetic data over N seeds each, in float32 and in the reduced precision the package chooses where the
host computes bfloat16 natively, side by side.

Programs (from a ModelZoo-TensorFlow checkout, copied to a temporary folder and run unmodified through
`python -m npu_bridge_compat run --tf1`):
- bert: built-in/nlp/BertCOLA_ID1629_for_TensorFlow/run_classifier.py (NPUEstimator, NPURunConfig with
  iterations_per_loop=5 and precision_mode=allow_mix_precision; AdamWeightDecay, global-norm clipping): a tiny
  BERT (2 layers, hidden 32, sequences of 16) on CoLA-like sentences whose label says whether a marker word occurs;
  quality: eval_accuracy of its dev set.
- mlp: built-in/cv/image_classification/Multi-Layer_Perceptron_ID0628_for_TensorFlow/mlp.py (a session,
  iterations_per_loop=10, Adam wrapped in NPULossScaleOptimizer with ExponentialUpdateLossScaleManager under
  allow_mix_precision): three Gaussian clusters in 4 dimensions (Iris-like); quality: its test accuracy.
- lenet: built-in/nlp/LeNet_ID0127_for_TensorFlow/LeNet.py (a session, a dataset iterator,
  iterations_per_loop=10, summaries every run): MNIST-format files of ten noisy digit templates; quality: its test
  accuracy.
Each program's quality threshold is `THRESHOLDS`: the scripts and their test/train_*_1p.sh print the accuracy but
set no target, and the folders' READMEs give no accuracy reached on an NPU or GPU (mlp's README_ori.md, the
original project's, says its MLP reached 98% on Iris); a float32 run of the synthetic task reaches 0.9.

Precisions: `float32` is NPU_BRIDGE_COMPAT_REDUCED_PRECISION=off; `bfloat16` is =on, the bfloat16 pass in every
run, which is what a host with native bfloat16 keeps wherever it is faster (the host facts decide: this benchmark
forces it, so that a host whose bfloat16 is emulated measures what a native one would learn). `float16` (asked for
by name, not run by default) is =on with NPU_BRIDGE_COMPAT_CPU_FLOAT16=1: grappler's float16 emulation, which rounds
as the NPU does (float16's 11 significant bits and its range: a loss scale overflows there as on the NPU), slower
than float32 on a CPU; it shows what the program learns in the NPU's own precision.

Each (program, precision) runs its seeds in one process (a worker started through `run --tf1` in the program's
copied folder, running the script once per seed with its flags reset), as the import and start-up of TensorFlow
cost more than a tiny run. Seeds choose the synthetic data and the default graph's random seed (the BERT script's
Estimator builds a graph of its own, which that seed does not reach). mlp.py's printed accuracy is that of its
training set (the script evaluates its predictions for the training inputs), LeNet.py's that of ten test batches.

    python benchmarks/precision_convergence.py --modelzoo PATH [--seeds 10] [--first-seed 0]
        [--programs bert,mlp,lenet] [--precisions float32,bfloat16[,float16]]

The table goes to stdout (markdown), with the seeds where a precision and float32 end on different sides of
the threshold; each run's figures go to stderr.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
import types
from contextlib import redirect_stdout
from pathlib import Path

import numpy as np

FOLDERS = {
    "bert": "TensorFlow/built-in/nlp/BertCOLA_ID1629_for_TensorFlow",
    "mlp": "TensorFlow/built-in/cv/image_classification/Multi-Layer_Perceptron_ID0628_for_TensorFlow",
    "lenet": "TensorFlow/built-in/nlp/LeNet_ID0127_for_TensorFlow",
}
SCRIPTS = {"bert": "run_classifier.py", "mlp": "mlp.py", "lenet": "LeNet.py"}
THRESHOLDS = {"bert": 0.9, "mlp": 0.9, "lenet": 0.9}
# Each precision's environment (NPU_BRIDGE_COMPAT_REDUCED_PRECISION, NPU_BRIDGE_COMPAT_CPU_FLOAT16).
PRECISIONS = {"float32": ("off", ""), "bfloat16": ("on", ""), "float16": ("on", "1")}
DEFAULT_PRECISIONS = ("float32", "bfloat16")
WORKER = "_precision_convergence_worker.py"
BERT_WORDS = [f"w{i}" for i in range(40)]
MARKER = "good"  # a CoLA-like sentence is "acceptable" (label 1) where this word occurs


# --- synthetic data -------------------------------------------------------------------------------------------


def bert_data(folder: Path, seed: int) -> list[str]:
    """CoLA-format train.tsv / dev.tsv, a vocabulary and a tiny BERT config in `folder`; the script's arguments."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)

    def sentences(count: int) -> str:
        lines = []
        for index in range(count):
            words = rng.choices(BERT_WORDS, k=rng.randint(5, 10))
            label = index % 2
            if label:
                words.insert(rng.randrange(len(words) + 1), MARKER)
            lines.append(f"src\t{label}\t*\t{' '.join(words)}")
        return "\n".join(lines) + "\n"

    (folder / "train.tsv").write_text(sentences(160))
    (folder / "dev.tsv").write_text(sentences(32))
    (folder / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", MARKER, *BERT_WORDS]))
    config = {
        "attention_probs_dropout_prob": 0.1,
        "hidden_act": "gelu",
        "hidden_dropout_prob": 0.1,
        "hidden_size": 32,
        "initializer_range": 0.02,
        "intermediate_size": 64,
        "max_position_embeddings": 64,
        "num_attention_heads": 2,
        "num_hidden_layers": 2,
        "type_vocab_size": 2,
        "vocab_size": 5 + 1 + len(BERT_WORDS),
    }
    (folder / "bert_config.json").write_text(json.dumps(config))
    return [
        "--task_name=cola",
        f"--data_dir={folder}",
        f"--vocab_file={folder / 'vocab.txt'}",
        f"--bert_config_file={folder / 'bert_config.json'}",
        f"--output_dir={folder / 'output'}",
        "--do_train=True",
        "--do_eval=True",
        "--max_seq_length=16",
        "--train_batch_size=8",
        "--eval_batch_size=8",
        "--learning_rate=1e-3",
        "--num_train_epochs=4",  # 80 steps
        "--iterations_per_loop=5",
        "--precision_mode=allow_mix_precision",
    ]


def mlp_data(folder: Path, seed: int) -> list[str]:
    """iris.train / iris.test of three Gaussian clusters in 4 dimensions; the script's arguments."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    names = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    centres = rng.uniform(1.0, 7.0, size=(3, 4))

    def rows(per_class: int) -> str:
        lines = []
        for label, centre in enumerate(centres):
            for point in centre + rng.normal(0.0, 1.0, size=(per_class, 4)):
                lines.append(",".join(f"{v:.2f}" for v in point) + f",{names[label]}")
        rng.shuffle(lines)
        return "\n".join(lines) + "\n"

    (folder / "iris.train").write_text(rows(40))
    (folder / "iris.test").write_text(rows(10))
    return [f"--data_path={folder}", "--precision_mode=allow_mix_precision", "--training_epochs=400"]


def lenet_data(folder: Path, seed: int) -> list[str]:
    """The four MNIST files (idx, gzip) of ten noisy 28x28 templates; the script's arguments."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    templates = 255.0 * (rng.uniform(size=(10, 28, 28)) < 0.5)

    def write(name: str, count: int) -> None:
        labels = rng.integers(0, 10, size=count).astype(np.uint8)
        images = np.clip(templates[labels] + rng.normal(0, 60, size=(count, 28, 28)), 0, 255).astype(np.uint8)
        with gzip.open(folder / f"{name}-images-idx3-ubyte.gz", "wb") as stream:
            stream.write(np.array([2051, count, 28, 28], ">u4").tobytes() + images.tobytes())
        with gzip.open(folder / f"{name}-labels-idx1-ubyte.gz", "wb") as stream:
            stream.write(np.array([2049, count], ">u4").tobytes() + labels.tobytes())

    write("train", 21000)  # the reader keeps 5000 for validation
    write("t10k", 400)
    return [
        f"--data_path={folder}",
        "--precision_mode=allow_mix_precision",
        "--batch_size=32",
        "--steps=600",
        "--epochs=1",
        "--iteration_per_loop=10",
    ]


DATA = {"bert": bert_data, "mlp": mlp_data, "lenet": lenet_data}


# --- reading a run's figures ---------------------------------------------------------------------------------


def figures(program: str, printed: str, folder: Path) -> tuple[float, float]:
    """(quality, final loss) of one run: what the script printed or wrote."""
    if program == "bert":
        results = dict(line.split(" = ") for line in (folder / "output" / "eval_results.txt").read_text().splitlines())
        return float(results["eval_accuracy"]), float(results["loss"])
    if program == "mlp":
        quality = float(re.findall(r"accuracy: ([0-9.]+)", printed)[-1])
        loss = float(re.findall(r"loss: ([0-9.naif]+)", printed)[-1])
        return quality, loss
    quality = float(re.findall(r"Final Accuracy accuracy : ([0-9.]+)", printed)[-1])
    loss = float(re.findall(r"loss : ([0-9.naif]+)", printed)[-1])
    return quality, loss


# --- the worker: one program, one precision, every seed, in one process ----------------------------------------


def worker_main() -> None:
    """Run the program of this folder once per seed (argv: program, data root, seeds as JSON); print one JSON
    line per run."""
    import tensorflow as tf
    from absl import flags

    program, data_root, seeds = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
    # LeNet.py imports matplotlib for a plot its training never draws; this benchmark does not install it
    sys.modules.setdefault("matplotlib", types.ModuleType("matplotlib"))
    sys.modules.setdefault("matplotlib.pyplot", types.ModuleType("matplotlib.pyplot"))
    sys.modules["matplotlib"].pyplot = sys.modules["matplotlib.pyplot"]
    script = str(Path.cwd() / SCRIPTS[program])
    for seed in seeds:
        folder = data_root / f"{program}-{seed}"
        arguments = DATA[program](folder, seed)
        for name in list(flags.FLAGS.flags_by_module_dict().get("__main__", [])):
            delattr(flags.FLAGS, name.name)  # the previous run's script flags: the script defines them again
        flags.FLAGS.unparse_flags()
        tf.compat.v1.reset_default_graph()
        tf.compat.v1.set_random_seed(seed)
        np.random.seed(seed)
        random.seed(seed)
        sys.argv = [script, *arguments]
        printed = io.StringIO()
        started = time.perf_counter()
        error = None
        with redirect_stdout(printed):
            try:
                import runpy

                runpy.run_path(script, run_name="__main__")
            except SystemExit as exit:
                error = None if exit.code in (None, 0) else f"exit {exit.code}"
            except Exception:  # noqa: BLE001 - a run that fails is a figure too
                error = traceback.format_exc()[-1500:]
        seconds = time.perf_counter() - started
        try:
            quality, loss = figures(program, printed.getvalue(), folder)
        except (OSError, IndexError, KeyError, ValueError) as missing:
            quality, loss, error = float("nan"), float("nan"), error or f"no figures: {missing}"
        print(json.dumps({"seed": seed, "quality": quality, "loss": loss, "seconds": seconds, "error": error}))
        sys.stdout.flush()


# --- the driver ----------------------------------------------------------------------------------------------


def run_worker(modelzoo: Path, program: str, precision: str, seeds: list[int], scratch: Path) -> list[dict]:
    copy = scratch / f"{program}-{precision}"
    shutil.copytree(modelzoo / FOLDERS[program], copy)
    (copy / "output" / "ckpt_npu").mkdir(parents=True)  # where LeNet.py saves, as its test script prepares
    (copy / WORKER).write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(Path(__file__).resolve().parent)!r})\n"
        "from precision_convergence import worker_main\n"
        "worker_main()\n"
    )
    environment = {
        **os.environ,
        "NPU_BRIDGE_COMPAT_REDUCED_PRECISION": PRECISIONS[precision][0],
        "NPU_BRIDGE_COMPAT_CPU_FLOAT16": PRECISIONS[precision][1],
        "RANK_SIZE": "1",
        "RANK_ID": "0",
        "DEVICE_ID": "0",
        "DEVICE_INDEX": "0",
        "TF_CPP_MIN_LOG_LEVEL": "2",
    }
    command = [
        sys.executable,
        "-m",
        "npu_bridge_compat",
        "run",
        "--tf1",
        WORKER,
        program,
        str(scratch / "data"),
        json.dumps(seeds),
    ]
    finished = subprocess.run(command, cwd=copy, env=environment, capture_output=True, text=True, check=False)
    runs = [json.loads(line) for line in finished.stdout.splitlines() if line.startswith('{"seed"')]
    if len(runs) < len(seeds):
        print(f"{program} {precision}: the worker ended early:\n{finished.stderr[-3000:]}", file=sys.stderr)
    for run in runs:
        print(f"{program} {precision} {json.dumps(run)}", file=sys.stderr)
    return runs


def summary(runs: list[dict], threshold: float) -> tuple[str, str, str]:
    """(reached, final loss median [min-max], failed runs) of one program and precision."""
    good = [run for run in runs if run["error"] is None]
    reached = sum(1 for run in good if run["quality"] >= threshold)
    losses = [run["loss"] for run in good]
    loss = f"{statistics.median(losses):.3g} [{min(losses):.3g}-{max(losses):.3g}]" if losses else "-"
    qualities = [run["quality"] for run in good]
    quality = f"{statistics.median(qualities):.3g} [{min(qualities):.3g}-{max(qualities):.3g}]" if qualities else "-"
    return f"{reached}/{len(runs)}", quality, loss


def different_sides(runs: list[dict], reference: list[dict], threshold: float) -> str:
    """The seeds where `runs` and `reference` (float32's runs) end on different sides of the threshold, with
    both qualities; "none" where every seed ends on the same side."""
    reached = {run["seed"]: run for run in reference if run["error"] is None}
    differing = [
        f"{run['seed']} ({run['quality']:.3g} against {reached[run['seed']]['quality']:.3g})"
        for run in runs
        if run["error"] is None
        and run["seed"] in reached
        and (run["quality"] >= threshold) != (reached[run["seed"]]["quality"] >= threshold)
    ]
    return ", ".join(differing) or "none"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modelzoo", default=os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO"))
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--precisions", default=",".join(DEFAULT_PRECISIONS))
    parser.add_argument("--programs", default="bert,mlp,lenet")
    options = parser.parse_args()
    if not options.modelzoo:
        parser.error("--modelzoo: name a ModelZoo-TensorFlow checkout (or set NPU_BRIDGE_COMPAT_MODELZOO)")
    programs = options.programs.split(",")
    unknown = [name for name in programs if name not in FOLDERS]
    if unknown:
        parser.error(f"--programs: unknown {', '.join(unknown)}; known: {', '.join(FOLDERS)}")
    import tensorflow as tf

    seeds = list(range(options.first_seed, options.first_seed + options.seeds))
    precisions = options.precisions.split(",")
    if any(name not in PRECISIONS for name in precisions):
        parser.error(f"--precisions: known are {', '.join(PRECISIONS)}")
    rows = []
    results = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as scratch:
        for program in programs:
            for precision in precisions:
                runs = run_worker(Path(options.modelzoo), program, precision, seeds, Path(scratch))
                results[program, precision] = runs
                rows.append((program, precision, *summary(runs, THRESHOLDS[program])))
    print(
        f"TensorFlow {tf.__version__}, Python {platform.python_version()}, {len(seeds)} seeds, "
        f"{time.perf_counter() - started:.0f} s\n"
    )
    print("| program | precision | reached the threshold | quality, median [min-max] | final loss, median [min-max] |")
    print("|---|---|---|---|---|")
    for program, precision, reached, quality, loss in rows:
        print(f"| {program} (>= {THRESHOLDS[program]}) | {precision} | {reached} | {quality} | {loss} |")
    if "float32" in precisions:
        print()
        for (program, precision), runs in results.items():
            if precision != "float32":
                sides = different_sides(runs, results[program, "float32"], THRESHOLDS[program])
                print(f"- {program}, {precision} against float32, seeds on different sides of the threshold: {sides}")


if __name__ == "__main__":
    main()
