"""The option translator's output side: the host plan per concern, and its report."""

from npu_bridge_compat.host.plan import HostPlan, build_plan
from npu_bridge_compat.host.platform import HostFacts, detect_host
from npu_bridge_compat.host.report import Report, ReportEntry, log_once

__all__ = ["HostFacts", "HostPlan", "Report", "ReportEntry", "build_plan", "detect_host", "log_once"]
