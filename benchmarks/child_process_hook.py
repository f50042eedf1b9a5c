"""The cost of `run`'s process-start hook (npu_bridge_compat/processes) per Python process a command starts.

Two kinds of child, each started by a shell (`bash -c "python3 ..."`), rounds alternating:

- a Python process that is not a program of the port (`python3 -c pass`, as shell scripts start to compute
  something): plain, and with the command's environment `run` gives (the hook imported, the process listed);
- a script that imports TensorFlow: started by `run` itself (`python -m npu_bridge_compat run --tf2 probe.py`, what
  a user would otherwise write into the launch script), and as `python3 probe.py` under the hook, which starts it
  again as `run` does (one exec): the hook's cost over `run`'s own.

Reported: the median wall time and processor time of each, and the ratios (the goal: within 1.05).

    python benchmarks/child_process_hook.py [--rounds 9]
"""

import argparse
import json
import os
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from npu_bridge_compat.processes import hooked_environment

PROBE = "import tensorflow as tf\nprint(tf.constant(1).numpy())\n"


def timed(command: str, environment: dict[str, str], folder: str) -> tuple[float, float]:
    """The command's wall time, and the processor time (user and system) of it and its children: on a loaded
    machine the second is the steadier figure."""
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    done = subprocess.run(["bash", "-c", command], cwd=folder, env=environment, capture_output=True, text=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command} failed:\n{done.stderr[-2000:]}")
    return wall, after.ru_utime + after.ru_stime - used.ru_utime - used.ru_stime


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
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        for _ in range(arguments.rounds):
            for name, (command, environment) in cases.items():
                times[name].append(timed(command, environment, folder))
            os.remove(os.path.join(hook, "processes.txt"))  # the list of processes grows otherwise
        shutil.rmtree(os.path.join(folder, "__pycache__"), ignore_errors=True)
    result: dict = {"rounds": arguments.rounds}
    names = list(cases)
    for index, figure in enumerate(("wall_s", "cpu_s")):
        medians = {name: round(statistics.median(run[index] for run in runs), 4) for name, runs in times.items()}
        result[figure] = {
            **medians,
            "hook over plain, not a program": round(medians[names[1]] / medians[names[0]], 3),
            "hook over run, a TensorFlow script": round(medians[names[3]] / medians[names[2]], 3),
        }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
