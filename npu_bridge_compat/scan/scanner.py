"""Scan files and folders: read every Python file (in worker processes for large trees), classify, report."""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import logging
import multiprocessing
import os
import warnings
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import NamedTuple

from npu_bridge_compat.logs import TENSORFLOW_LOGGER
from npu_bridge_compat.plan import HostFacts, detect_host
from npu_bridge_compat.scan.classify import Classifier
from npu_bridge_compat.scan.reader import FileFacts, read_file
from npu_bridge_compat.scan.report import ScanReport, ScriptReport
from npu_bridge_compat.scan.run_decision import Imported, ProgramFile, decide, local_modules, reached_files

PARALLEL_FROM = 200  # files; below this, starting worker processes costs more than it saves


class ScanPathError(ValueError):
    """A path given to scan does not exist."""


class SourceFile(NamedTuple):
    path: str  # absolute
    shown: str  # as the user named it
    root: str  # the scanned folder (the file's own folder for a file argument)


def python_files(paths: Sequence[str]) -> list[SourceFile]:
    """Every `.py` file under the folders (hidden folders and __pycache__ skipped) and every file named."""
    files: dict[str, SourceFile] = {}
    for given in paths:
        absolute = os.path.abspath(given)
        if os.path.isfile(absolute):
            files.setdefault(absolute, SourceFile(absolute, given, os.path.dirname(absolute)))
        elif os.path.isdir(absolute):
            for directory, folders, names in os.walk(absolute):
                folders[:] = sorted(f for f in folders if not f.startswith(".") and f != "__pycache__")
                for name in sorted(names):
                    if name.endswith(".py"):
                        path = os.path.join(directory, name)
                        shown = os.path.join(given, os.path.relpath(path, absolute))
                        files.setdefault(path, SourceFile(path, shown, absolute))
        else:
            raise ScanPathError(f"no such file or folder: {given}")
    return list(files.values())


def _worker_init() -> None:
    gc.disable()  # syntax trees hold no cycles; the collector would only slow parsing down


def _read_all(paths: list[str], workers: int, stack: contextlib.ExitStack) -> Iterator[FileFacts]:
    """The files' facts; large trees are read by `workers` processes, started right away. They are forked (no
    re-import of the caller's main module, and the CLI forks before TensorFlow is loaded) where the platform
    can; a worker that dies stops the scan with an error instead of a hang."""
    if workers <= 1 or len(paths) < PARALLEL_FROM:
        return map(read_file, paths)
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pool = stack.enter_context(ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init))
    return pool.map(read_file, paths, chunksize=16)


@contextlib.contextmanager
def _quiet_logger(name: str) -> Iterator[None]:
    logger = logging.getLogger(name)
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def default_workers() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def scan(
    paths: Sequence[str],
    host: HostFacts | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int | None = None,
) -> ScanReport:
    """Read and classify every Python file under `paths` (never executing them); `progress(done, total)` is
    called after each file."""
    by_path = {file.path: file for file in python_files(paths)}
    scripts = []
    with contextlib.ExitStack() as stack, warnings.catch_warnings():
        facts = _read_all(list(by_path), default_workers() if workers is None else workers, stack)
        # looking names up in TensorFlow makes it warn about its own moved and deprecated modules: not findings
        warnings.simplefilter("ignore")
        stack.enter_context(_quiet_logger(TENSORFLOW_LOGGER))
        if progress is not None:
            progress(0, len(by_path))
        host = host or detect_host()
        classifier = Classifier(host)  # imports TensorFlow and the alias tree while the workers parse
        imports: dict[str, list[Imported]] = {}  # path -> the files of the tree it imports
        for done, fact in enumerate(facts, start=1):
            file = by_path[fact.path]
            scripts.append(classifier.script(fact, file.shown, file.root))
            imports[fact.path] = local_modules(fact, file.root) if fact.error is None else []
            if progress is not None:
                progress(done, len(by_path))
    scripts = with_worlds(scripts, {file.shown: path for path, file in by_path.items()}, imports)
    scripts.sort(key=lambda script: script.path)
    return ScanReport(tuple(paths), host.describe(), tuple(scripts))


def with_worlds(
    scripts: Sequence[ScriptReport], paths: dict[str, str], imports: dict[str, list[Imported]]
) -> list[ScriptReport]:
    """Each script with the world decided from its signs and those of the scanned files it imports (directly or
    through others); `paths`: a script's shown path -> its file, `imports`: a file -> the files it imports."""
    by_file = {paths[script.path]: script for script in scripts}
    decided = []
    for script in scripts:
        path = paths[script.path]
        folder = os.path.dirname(path)
        files = reached_files(path, lambda file: imports.get(file, ()), by_file)
        decision = decide(
            ProgramFile(os.path.relpath(file, folder), place, by_file[file].signs) for file, place in files
        )
        decided.append(dataclasses.replace(script, world=decision))
    return decided
