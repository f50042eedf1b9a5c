"""`npu_bridge.tbe.npu_cube_ops`."""

from npu_bridge_compat.ops import deformable_conv2d  # noqa: F401
