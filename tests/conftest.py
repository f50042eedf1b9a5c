import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

from npu_bridge_compat.host import HostFacts  # noqa: E402


@pytest.fixture
def cpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=0)


@pytest.fixture
def gpu_host() -> HostFacts:
    return HostFacts(tf_version="2.15.1", gpu_count=1)
