"""What only a GPU shows: float16 mixed precision, the memory cap and the device choice. Skipped on CPU hosts.

GPU devices are configured once per process (visible devices, virtual devices), so each check runs in a fresh
Python process and prints what it observed.
"""

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import tensorflow as tf

pytestmark = [
    pytest.mark.skipif(not tf.config.list_physical_devices("GPU"), reason="needs a GPU"),
    pytest.mark.starts_processes,
]

SESSION = """
import json, sys
import numpy as np
import tensorflow as tf
sys.path.insert(0, "tests")
from helpers import config_with
from npu_bridge_compat.session import NPUSession
v1 = tf.compat.v1
"""


def observe(code: str) -> dict:
    """Run `code` after SESSION in a new process; it prints one JSON object, returned here."""
    result = subprocess.run(
        [sys.executable, "-c", SESSION + textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=Path(__file__).parents[1],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_mixed_precision_runs_float16_on_the_gpu():
    seen = observe("""
        with tf.Graph().as_default():
            x = v1.placeholder(tf.float32, [64, 64])
            y = tf.exp(tf.matmul(x, v1.get_variable("w", [64, 64]), name="matmul"), name="exp")
            with NPUSession(config=config_with(precision_mode="allow_mix_precision")) as sess:
                sess.run(v1.global_variables_initializer())
                metadata = v1.RunMetadata()
                sess.run(y, {x: np.ones([64, 64])}, options=v1.RunOptions(output_partition_graphs=True),
                         run_metadata=metadata)
        nodes = {n.name: (n.device, tf.dtypes.as_dtype(n.attr["T"].type).name)
                 for g in metadata.partition_graphs for n in g.node if "T" in n.attr}
        print(json.dumps(nodes))
    """)
    device, dtype = seen["matmul"]
    assert "GPU" in device and dtype == "float16"
    assert seen["exp"][1] == "float32"  # deny-listed, as the NPU keeps it in float32


def test_graph_and_variable_memory_cap_the_gpu():
    seen = observe("""
        config = config_with(graph_memory_max_size=str(768 << 20), variable_memory_max_size=str(256 << 20))
        with tf.Graph().as_default(), NPUSession(config=config) as sess:
            print(json.dumps({d.name: d.memory_limit_bytes for d in sess.list_devices() if d.device_type == "GPU"}))
    """)
    assert list(seen.values()) == [1024 << 20]  # one GPU of graph + variable memory


def test_session_device_id_chooses_the_gpu():
    count = len(tf.config.list_physical_devices("GPU"))
    seen = observe(f"""
        with tf.Graph().as_default():
            y = tf.matmul(tf.ones([8, 8]), tf.ones([8, 8]), name="matmul")
            with NPUSession(config=config_with(session_device_id={count - 1})) as sess:
                metadata = v1.RunMetadata()
                sess.run(y, options=v1.RunOptions(output_partition_graphs=True), run_metadata=metadata)
                gpus = [d.name for d in sess.list_devices() if d.device_type == "GPU"]
        placed = [n.device for g in metadata.partition_graphs for n in g.node if n.name == "matmul"]
        print(json.dumps({{"gpus": gpus, "placed": placed}}))
    """)
    assert len(seen["gpus"]) == 1  # only the chosen GPU is visible to the session
    assert seen["placed"] and "GPU:0" in seen["placed"][0]
