"""A ported sess.run configuration, read by the translator: what each NPU option becomes on this host.

The ConfigProto is built exactly as Ascend's documentation tells ported scripts to build it (mixed compute,
dumps, mixed precision with a modified op list). Run:  python examples/explain_ported_config.py
"""

import os
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf  # noqa: E402
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig  # noqa: E402

from npu_bridge_compat import build_plan, options_from_config_proto  # noqa: E402

workdir = tempfile.mkdtemp(prefix="npu_example_")
mixlist = os.path.join(workdir, "ops_info.json")
with open(mixlist, "w") as file:
    file.write(
        '{"black-list": {"to-add": ["Matmul"]},  // keep matmuls in float32\n "white-list": {"to-remove": ["Conv2D"]}}'
    )

config = tf.compat.v1.ConfigProto(allow_soft_placement=True)
custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
custom_op.name = "NpuOptimizer"
custom_op.parameter_map["use_off_line"].b = True
custom_op.parameter_map["mix_compile_mode"].b = True
custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes("allow_mix_precision")
custom_op.parameter_map["modify_mixlist"].s = tf.compat.as_bytes(mixlist)
custom_op.parameter_map["enable_dump"].b = True
custom_op.parameter_map["dump_path"].s = tf.compat.as_bytes(workdir)
custom_op.parameter_map["dump_step"].s = tf.compat.as_bytes("0|5|10")
custom_op.parameter_map["hcom_parallel"].b = True
config.graph_options.rewrite_options.remapping = RewriterConfig.OFF

plan = build_plan(options_from_config_proto(config), config=config)
print(plan.report)
print()
print("ConfigProto handed to TensorFlow:")
print(plan.host_config(config))
print("Environment for grappler:", dict(plan.environment))
