"""TensorFlow's internals stay in npu_bridge_compat/compat/: no other module imports a private TensorFlow, Keras
or Estimator module or reaches a private attribute of their objects (the names below are every one the package
has used; a new reach belongs in compat/ behind a function named for what it does)."""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "npu_bridge_compat"
COMPAT = PACKAGE / "compat"
PRIVATE_MODULES = ("tensorflow.python", "tensorflow_estimator.python", "keras.src", "tf_keras.src")
# Private attributes of TensorFlow, Keras and Estimator objects that the package has needed.
PRIVATE_ATTRIBUTES = frozenset(
    {
        "_unsafe_unfinalize",
        "_control_flow_context",
        "_add_control_input",
        "_as_graph_element",
        "_set_attr",
        "_set_device",
        "_nodes_by_name",
        "_control_outputs",
        "_attr_scope",
        "_is_stateful",
        "_thread_local_data",
        "_context_handle",
        "_config",
        "_session_config",
        "_master",
        "_save_checkpoints_steps",
        "_save_checkpoints_secs",
        "_save_summary_steps",
        "_log_step_count_steps",
        "_model_fn",
        "_warm_start_settings",
        "_steps_per_execution",
        "_train_counter",
        "_HookedSession",
        "_update_forward_compatibility_date_number",
        "_fused_batch_norm",
        "_FORWARD_COMPATIBILITY_HORIZON",
        "_experimental_distribute_dataset",
        "_num_replicas_in_sync",
        "_call_model_fn",
        "_call_input_fn",
        "_train_with_estimator_spec",
        "_convert_train_steps_to_hooks",
    }
)
# Reaches not moved yet (issue 20 is open for them): the count may only fall.
PENDING: dict[str, int] = {}


def _private_reaches(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            modules = [node.module]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        else:
            modules = []
        found += [f"line {node.lineno}: import of {module}" for module in modules if module.startswith(PRIVATE_MODULES)]
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE_ATTRIBUTES:
            found.append(f"line {node.lineno}: private attribute {node.attr}")
    return sorted(found, key=lambda line: int(line.split()[1].rstrip(":")))


SOURCES = sorted(path for path in PACKAGE.rglob("*.py") if COMPAT not in path.parents)


def test_the_boundary_check_finds_private_reaches(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from tensorflow.python.eager import context\nimport keras.src.utils\n"
        "graph._unsafe_unfinalize()\nconfig = session._config\n"
    )
    assert _private_reaches(sample) == [
        "line 1: import of tensorflow.python.eager",
        "line 2: import of keras.src.utils",
        "line 3: private attribute _unsafe_unfinalize",
        "line 4: private attribute _config",
    ]


@pytest.mark.parametrize("path", SOURCES, ids=lambda path: str(path.relative_to(PACKAGE)))
def test_no_private_tensorflow_reach_outside_compat(path):
    reaches = _private_reaches(path)
    pending = PENDING.get(str(path.relative_to(PACKAGE)), 0)
    assert len(reaches) <= pending, reaches
