"""The cost of `run`'s process-start hook (npu_bridge_compat/processes) per Python process a command starts.

Two kinds of child, each started by a shell (`bash -c "python3 ..."`), rounds alternating:

- a Python process that is not a program of the port (`python3 -c pass`, as shell scripts start to compute
  something): plain, and with the command's environment `run` gives (the hook imported, the process listed);
- a script that imports TensorFlow: started by `run` itself (`python -m npu_bridge_compat run --tf2 probe.py`, what
  a user would otherwise write into the launch script), and as `python3 probe.py` under the hook, which starts it
  again as `run` does (one exec): the hook's cost over `run`'s own.

Reported: the median wall time of each, and the ratios (the goal: within 1.05).

    python benchmarks/child_process_hook.py [--rounds 9]
"""

import argparse
import json
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from npu_bridge_compat.processes import hooked_environment

PROBE = "import tensorflow as tf\nprint(tf.constant(1).numpy())\n"


def timed(command: str, environment: dict[str, str], folder: str) -> float:
    began = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stderr[-2000:]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    arguments = parser.parse_args()
    if arguments.rounds < 1:
        parser.error(f"--rounds must be at least 1, not {arguments.rounds}")
    python = shlex.quote(sys.executable)
    plain = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryDirectory() as hook:
        with open(os.path.join(folder, "probe.py"), "w") as file:
            file.write(PROBE)
        hooked = {**hooked_environment(hook, ["--tf2"]), "TF_CPP_MIN_LOG_LEVEL": "2"}
        cases = {
            "python -c pass, plain": (f"{python} -c pass", plain),
            "python -c pass, under the hook": (f"{python} -c pass", hooked),
            "TensorFlow script, run --tf2": (f"{python} -m npu_bridge_compat run --tf2 probe.py", plain),
            "TensorFlow script, under the hook": (f"{python} probe.py", hooked),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(arguments.rounds):
            for name, (command, environment) in cases.items():
                times[name].append(timed(command, environment, folder))
            os.remove(os.path.join(hook, "processes.jsonl"))  # the list of processes grows otherwise
        shutil.rmtree(os.path.join(folder, "__pycache__"), ignore_errors=True)
    medians = {name: round(statistics.median(values), 4) for name, values in times.items()}
    names = list(cases)
    print(
        json.dumps(
            {
                "rounds": arguments.rounds,
                "median_s": medians,
                "hook over plain, not a program": round(medians[names[1]] / medians[names[0]], 3),
                "hook over run, a TensorFlow script": round(medians[names[3]] / medians[names[2]], 3),
            },
            indent=1,
        )
    )


if __name__ == "__main__":
    main()
