"""The option translator's output side: the host plan per concern, and its report."""

from npu_bridge_compat.plan.host_plan import HostPlan, build_plan
from npu_bridge_compat.plan.platform import HostFacts, PlanEnvironment, detect_host, plan_environment
from npu_bridge_compat.plan.report import Report, ReportEntry, log_once

__all__ = [
    "HostFacts",
    "HostPlan",
    "PlanEnvironment",
    "Report",
    "ReportEntry",
    "build_plan",
    "detect_host",
    "log_once",
    "plan_environment",
]
