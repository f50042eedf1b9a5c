"""Which run a program gets: written for TF 1.15 (`run --tf1`) or TensorFlow 2 (TF 2.6, `run --tf2`).

Decided from the program's own signs, read statically from the script and the project modules it imports
(`decide`, with the rules of where a sign counts):

- the adapter it imports and the names only one world serves decide alone where they surely run (in the script,
  or at the top level of a module its top-level imports reach): `npu_bridge` (TF1's adapter), a TF 1.15 name
  under plain `tensorflow` (`tf.Session`, `tf.app.flags`), `tensorflow.contrib` against `npu_device` (TF2's
  adapter), a name TensorFlow 2 has and `tf.compat.v1` lacks (`tf.random.set_seed`);
- otherwise the signs of each world are weighed, each kind once: sessions, placeholders, graph variables, TF1
  optimizers, `tf.layers`, session configs, Estimators against `tf.function`, `GradientTape`, Keras models and
  mixed precision, TF 2.6 names; the heavier side wins, and a tie (no sign at all included) is TensorFlow 2,
  `run`'s world that changes least.

`tensorflow.python.keras` is no sign (it was tf.keras up to TF 2.5, and in TF 1.15), nor is `tf.compat.v1` used
for logging, flags or `app.run`, nor turning TF2 behaviour off (`disable_eager_execution`, `disable_v2_behavior`,
`npu_device.compat.enable_v1`), which makes graph code run in either world. `scan` reports each script's
decision with its evidence; `run` decides the same way when neither `--tf1` nor `--tf2` is given
(classify.py's `decide_program`), and says so when it had to weigh.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import os
from collections.abc import Callable, Container, Iterable, Sequence
from typing import NamedTuple

from npu_bridge_compat.imports.world import today_has
from npu_bridge_compat.legacy.runs import RunAs
from npu_bridge_compat.scan.reader import ADAPTER_ROOTS, AT_IMPORT, GUARDED, IN_FUNCTION, FileFacts

TF1, TF2 = RunAs.TF1, RunAs.TF2  # the worlds a program runs in (`run --tf1` / `--tf2`)
WORLDS = tuple(RunAs)
WORLD_NAMES = {TF1: "TF 1.15", TF2: "TF2"}


class SignWeight(NamedTuple):
    """What one kind of sign (a key of SIGN_WEIGHTS) says: the run it points to, and how much it weighs."""

    world: str
    weight: int  # what one kind of sign weighs
    label: str  # for the text report and run's line
    decisive: bool = False  # only its world serves it: where it surely runs, it decides alone


SIGN_WEIGHTS = {
    # TF 1.15
    "tf.contrib": SignWeight(TF1, 5, "tf.contrib", decisive=True),
    "TF 1.15 name": SignWeight(TF1, 5, "TF 1.15 names", decisive=True),
    "TF1 adapter": SignWeight(TF1, 4, "the TF1 adapter (npu_bridge)", decisive=True),
    "session": SignWeight(TF1, 3, "sessions"),
    "placeholder": SignWeight(TF1, 3, "placeholders"),
    "graph variables": SignWeight(TF1, 2, "graph variables and collections"),
    "TF1 training": SignWeight(TF1, 2, "TF1 optimizers and global steps"),
    "tf.layers": SignWeight(TF1, 2, "tf.layers"),
    "session config": SignWeight(TF1, 1, "session configs"),
    "Estimator": SignWeight(TF1, 1, "Estimators"),
    # TensorFlow 2
    "TF2-only name": SignWeight(TF2, 5, "names only TensorFlow 2 has", decisive=True),
    "TF2 adapter": SignWeight(TF2, 4, "the TF2 adapter (npu_device)", decisive=True),
    "tf.function": SignWeight(TF2, 3, "tf.function"),
    "GradientTape": SignWeight(TF2, 3, "GradientTape"),
    "Keras mixed precision": SignWeight(TF2, 2, "Keras mixed precision"),
    "TF 2.6 name": SignWeight(TF2, 2, "TF 2.6 names"),
    "eager execution": SignWeight(TF2, 2, "eager execution turned on"),
    "Keras model": SignWeight(TF2, 2, "Keras models"),
    "TF2 API": SignWeight(TF2, 1, "TF2 APIs (tf.config, tf.distribute, checkpoints)"),
}
_SIGNS_WHEN_GUARDED = frozenset({"TF1 adapter", "TF2 adapter"})  # (decide)


class Sign(NamedTuple):
    kind: str  # a key of SIGN_WEIGHTS
    name: str  # as the program spells it, TensorFlow as `tf` (tf.compat.v1.Session, npu_bridge.npu_init)
    line: int
    place: int  # reader.AT_IMPORT, IN_FUNCTION or GUARDED


# --- the signs of a name ----------------------------------------------------------------------------------


def _under(rest: str, *prefixes: str) -> bool:
    return any(rest == prefix or rest.startswith(prefix + ".") for prefix in prefixes)


def _style_kind(rest: str) -> str | None:
    """The kind of a TensorFlow name (relative to `tf` or `tf.compat.v1`) that signals a world by its style."""
    last = rest.rsplit(".", 1)[-1]
    if _under(rest, "Session") or (
        _under(rest, "train") and last in ("MonitoredTrainingSession", "MonitoredSession", "SingularMonitoredSession")
    ):
        return "session"
    if last in ("placeholder", "placeholder_with_default", "sparse_placeholder") and "." not in rest:
        return "placeholder"
    if rest in _GRAPH_VARIABLES or _under(rest, "GraphKeys", "train.Saver", "variable_scope"):
        return "graph variables"
    if _under(rest, "train") and (last.endswith("Optimizer") or last in _TF1_TRAINING):
        return "TF1 training"
    if _under(rest, "layers"):
        return "tf.layers"
    if _under(rest, *_SESSION_CONFIGS):
        return "session config"
    if _under(rest, "estimator"):
        return "Estimator"
    if rest == "function":
        return "tf.function"
    if _under(rest, "GradientTape", "autodiff"):
        return "GradientTape"
    if _under(rest, "keras.mixed_precision"):
        return "Keras mixed precision"
    if rest in ("enable_eager_execution", "enable_v2_behavior"):
        return "eager execution"
    if _under(rest, "keras.Model", "keras.Sequential", "keras.models", "keras.Input", "keras.callbacks"):
        return "Keras model"
    if _under(rest, "config", "train.Checkpoint", "train.CheckpointManager", "saved_model.save", "Module") or (
        _under(rest, "distribute") and last.endswith("Strategy")
    ):
        return "TF2 API"
    return None


_GRAPH_VARIABLES = frozenset(
    {
        "get_variable",
        "global_variables_initializer",
        "local_variables_initializer",
        "initialize_all_variables",
        "variables_initializer",
        "tables_initializer",
        "global_variables",
        "local_variables",
        "trainable_variables",
        "get_collection",
        "add_to_collection",
        "get_default_graph",
        "reset_default_graph",
        "assign",
        "train.import_meta_graph",
    }
)
# (TF2 programs make an InteractiveSession with a ConfigProto only to set GPU options)
_SESSION_CONFIGS = ("ConfigProto", "GPUOptions", "GraphOptions", "OptimizerOptions", "RunOptions", "InteractiveSession")
_TF1_TRAINING = frozenset(
    {"get_or_create_global_step", "get_global_step", "create_global_step", "exponential_decay", "piecewise_constant"}
)
_PUBLIC_V1 = "tensorflow.compat.v1"


def _api_and_rest(dotted: str) -> tuple[str, str]:
    """('v1' | 'v2' | 'tf', the name relative to that API) of a `tensorflow.` name."""
    for prefix, api in ((_PUBLIC_V1, "v1"), ("tensorflow.compat.v2", "v2")):
        if dotted == prefix or dotted.startswith(prefix + "."):
            return api, dotted[len(prefix) + 1 :]
    return "tf", dotted.partition(".")[2]


def _spelled(dotted: str) -> str:
    return "tf" + dotted[len("tensorflow") :] if dotted.split(".")[0] == "tensorflow" else dotted


def tensorflow_signs(candidates: Sequence[str], line: int, place: int) -> list[Sign]:
    """The signs of one TensorFlow name, under each name its variable may stand for (`tf` rebound to
    tf.compat.v1). Private modules (`tensorflow.python.*`, `tensorflow.python.keras` included) are no sign, and
    are never looked up."""
    split = [_api_and_rest(name) for name in candidates]
    if any(rest == "python" or rest.startswith(("python.", "_", "core.")) for _, rest in split):
        return []
    name, rest = candidates[0], split[0][1]
    if _under(rest, "contrib"):
        return [Sign("tf.contrib", _spelled(name), line, place)]
    if _under(rest, "examples.tutorials"):
        return [Sign("TF 1.15 name", _spelled(name), line, place)]
    if not rest or _under(rest, "compat"):
        return []
    if all(api == "tf" for api, _ in split):  # only `tf` is what the TF 1.15 world turns into tf.compat.v1
        here, in_v1 = today_has(name), today_has(f"{_PUBLIC_V1}.{rest}")
        if in_v1 and not here:
            return [Sign("TF 1.15 name", _spelled(name), line, place)]
        if here and not in_v1:
            return [Sign("TF2-only name", _spelled(name), line, place)]
    kind = _style_kind(rest)
    return [Sign(kind, _spelled(name), line, place)] if kind else []


def adapter_sign(dotted: str, line: int, place: int) -> Sign | None:
    """The TF1 adapter (npu_bridge) or the TF2 one (npu_device)."""
    top = dotted.split(".")[0]
    if top == "npu_bridge":
        return Sign("TF1 adapter", dotted, line, place)
    if top == "npu_device":
        return Sign("TF2 adapter", dotted, line, place)
    return None


# --- the decision -------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Evidence:
    """One kind of sign over the program: where it is first seen (where it decides, if it does anywhere), how
    many names and uses of it there are, whether it decides (decide()) and what it weighs."""

    kind: str
    first: str  # the name as spelled
    where: str  # path:line, the path relative to the script's folder
    names: int
    uses: int
    decisive: bool
    weight: int  # the kind's, or half of it where no sign of the kind surely runs

    @property
    def world(self) -> str:
        return SIGN_WEIGHTS[self.kind].world

    def as_json(self) -> dict:
        kind = SIGN_WEIGHTS[self.kind]
        return {
            "world": kind.world,
            "kind": self.kind,
            "weight": self.weight,
            "decisive": self.decisive,
            "first": self.first,
            "where": self.where,
            "names": self.names,
            "uses": self.uses,
        }


@dataclasses.dataclass(frozen=True)
class WorldDecision:
    """The world a program is run in, and why: `decisive` (signs only that world serves, in code that surely
    runs), `weighed` (the heavier signs), `conflict` (decisive signs of both: the heavier side; the other's names
    fail where they run), `default` (no sign, or as much of each: TensorFlow 2)."""

    world: str
    basis: str
    scores: dict[str, int]
    evidence: tuple[Evidence, ...]

    @property
    def guessed(self) -> bool:
        return self.basis != "decisive"

    @property
    def has_signs(self) -> bool:
        return bool(self.evidence)

    def summary(self, limit: int = 3) -> str:
        """One line: the world, how it was decided, and the strongest evidence of each side."""
        name = WORLD_NAMES[self.world]
        if not self.evidence:
            return f"{name} (no sign of either world: run's default)"
        other_world = TF2 if self.world == TF1 else TF1
        chosen, other = self._listed(self.world, limit), self._listed(other_world, limit)
        against = f"; against it, {WORLD_NAMES[other_world]}'s {other}" if other else ""
        scores = f"{self.scores[TF1]} to {self.scores[TF2]}"
        how = {
            "decisive": "decided by",
            "conflict": f"deciding signs of both worlds; weighed {scores}",
            "default": f"as much of each, {scores}: run's default",
            "weighed": f"weighed {scores}",
        }[self.basis]
        return f"{name} ({how}: {chosen}{against})" if chosen else f"{name} ({how}{against})"

    def _listed(self, world: str, limit: int) -> str:
        chosen = sorted(
            (item for item in self.evidence if item.world == world),
            key=lambda item: (not item.decisive, -item.weight),
        )
        shown = [f"{SIGN_WEIGHTS[item.kind].label} ({item.first}, {item.where})" for item in chosen[:limit]]
        more = f", and {len(chosen) - limit} more" if len(chosen) > limit else ""
        return ", ".join(shown) + more

    def as_json(self) -> dict:
        return {
            "world": self.world,
            "basis": self.basis,
            "scores": dict(self.scores),
            "summary": self.summary(),
            "evidence": [item.as_json() for item in self.evidence],
        }


class ProgramFile(NamedTuple):
    path: str  # relative to the script's folder
    reached: int  # how surely its top level runs (reached_files)
    signs: Sequence[Sign]


def decide(files: Iterable[ProgramFile]) -> WorldDecision:
    """The world of a program from the signs of its files: the script first, then the modules it imports.

    A sign in the script, or at the top level of a module its top-level imports reach, surely runs: there a kind
    only one world serves decides alone. One that runs only if a function of a module is called, or in a module
    imported only inside a function, counts half and decides nothing. Code that guards against a name's absence
    or branches on the version (and modules imported only there) was written for both worlds: no sign, but for
    an adapter imported there, which still says which TensorFlow its author ran."""
    first: dict[str, tuple[Sign, str]] = {}
    deciding: dict[str, tuple[Sign, str]] = {}
    sure: set[str] = set()
    names: dict[str, set[str]] = collections.defaultdict(set)
    uses: collections.Counter[str] = collections.Counter()
    for index, (path, reached, signs) in enumerate(files):
        for sign in sorted(signs, key=lambda sign: sign.line):
            place = max(sign.place, reached)
            if index == 0 and place == IN_FUNCTION:
                place = AT_IMPORT  # the script's functions are what it runs
            if place == GUARDED and sign.kind not in _SIGNS_WHEN_GUARDED:
                continue
            where = f"{path}:{sign.line}"
            first.setdefault(sign.kind, (sign, where))
            if place == AT_IMPORT:
                sure.add(sign.kind)
                if SIGN_WEIGHTS[sign.kind].decisive:
                    deciding.setdefault(sign.kind, (sign, where))
            names[sign.kind].add(sign.name)
            uses[sign.kind] += 1

    def evidence_of(kind: str) -> Evidence:
        sign, where = deciding.get(kind) or first[kind]
        weight = SIGN_WEIGHTS[kind].weight if kind in sure else -(-SIGN_WEIGHTS[kind].weight // 2)
        return Evidence(kind, sign.name, where, len(names[kind]), uses[kind], kind in deciding, weight)

    evidence = tuple(evidence_of(kind) for kind in SIGN_WEIGHTS if kind in first)
    scores = {world: sum(item.weight for item in evidence if item.world == world) for world in WORLDS}
    decisive = {world: any(item.decisive and item.world == world for item in evidence) for world in WORLDS}
    if decisive[TF1] != decisive[TF2]:
        return WorldDecision(TF1 if decisive[TF1] else TF2, "decisive", scores, evidence)
    basis = "conflict" if decisive[TF1] else "weighed" if scores[TF1] != scores[TF2] else "default"
    return WorldDecision(TF1 if scores[TF1] > scores[TF2] else TF2, basis, scores, evidence)


# --- a program: its script and the project modules it imports ------------------------------------------------


@functools.lru_cache(maxsize=4096)
def _listing(folder: str) -> frozenset[str]:
    try:
        return frozenset(os.listdir(folder))
    except OSError:
        return frozenset()


class Imported(NamedTuple):
    path: str
    place: int  # of the import statement: AT_IMPORT, IN_FUNCTION or GUARDED


def local_modules(facts: FileFacts, root: str, also: Sequence[str] = ()) -> list[Imported]:
    """The files of the tree that a file imports: relative imports, and absolute ones found next to it, in a
    folder above it up to `root`, in a literal folder it adds to sys.path, or in the folders `also`."""
    folder = os.path.dirname(facts.path)
    searched = [os.path.normpath(os.path.join(folder, extra)) for extra in facts.search_paths]
    directory = folder
    while True:
        searched.append(directory)
        if directory == root or os.path.dirname(directory) == directory:
            break
        directory = os.path.dirname(directory)
    searched += also
    found = []
    for imported in facts.imports:
        parts = [part for part in imported.module.split(".") if part]
        names = [] if imported.name in (None, "*") else [imported.name]
        if imported.level:
            base = folder
            for _ in range(imported.level - 1):
                base = os.path.dirname(base)
            bases = [base]
        elif parts and parts[0] in (*ADAPTER_ROOTS, "tensorflow"):
            continue
        else:
            bases = searched
        for base in bases:
            hit = _module_file(base, parts, names)
            if hit:
                found.extend(Imported(path, imported.place) for path in hit)
                break
    return found


def _module_file(base: str, parts: list[str], names: list[str]) -> list[str]:
    head = parts[0] if parts else (names[0] if names else "")
    if head and head not in _listing(base) and f"{head}.py" not in _listing(base):
        return []  # most imports name an installed package: one cached listing answers them
    stem = os.path.join(base, *parts)
    module = next((path for path in (stem + ".py", os.path.join(stem, "__init__.py")) if os.path.isfile(path)), None)
    if module is None and parts:
        return []
    submodules = [os.path.join(stem, name + ".py") for name in names]
    return [path for path in ([module] if module else []) + submodules if os.path.isfile(path)]


def reached_files(
    script: str, imports_of: Callable[[str], Iterable[Imported]], known: Container[str] | None = None
) -> list[Imported]:
    """The script and the files it reaches through `imports_of` (a file -> the files of the tree it imports),
    each with how surely its top level runs: AT_IMPORT when a chain of top-level imports reaches it, IN_FUNCTION
    when every chain has an import inside a function, GUARDED when every chain has a guarded one (an import
    chosen by version, or whose absence is caught). The script first, then in the order they are found;
    `known`: only files in it are followed."""
    order = [Imported(script, AT_IMPORT)]
    seen = {script}
    for most in (AT_IMPORT, IN_FUNCTION, GUARDED):  # the surest chains first
        index = 0
        while index < len(order):
            if order[index].place <= most:
                for module, place in imports_of(order[index].path):
                    if place <= most and module not in seen and (known is None or module in known):
                        seen.add(module)
                        order.append(Imported(module, most))
            index += 1
    return order
