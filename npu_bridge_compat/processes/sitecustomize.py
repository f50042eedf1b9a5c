"""npu_bridge_compat's process-start hook. `run` copies this file into a temporary folder that it puts first on
PYTHONPATH for the command it starts, and removes when the command ends; Python imports it in every Python process
of that command, however deep (a shell script's `python3 train.py`, os.system, subprocess, `nohup ... &`).

Standard library only, so that a Python process that is not a program of the port (`python3 -c "import json"` in
a shell script) pays nothing but this file's import:

- A script (`python [options] SCRIPT ARGS`) is started again, in the same process (exec), as
  `python [options] -m npu_bridge_compat.processes SCRIPT ARGS`: `run`'s own start of one script, with the flags
  given to `run` (processes/child.py).
- Another program (`-c`, `-m`, standard input, an installed program such as pip) gets the adapter's import
  paths (npu_bridge, hccl, npu_device), served from its first import of one of them.
- The user's own sitecustomize, found further along sys.path, runs after this hook, in the process that runs the
  program (once, after the exec for a script).
"""

import os
import sys

_FOLDER_VARIABLE = "NPU_BRIDGE_COMPAT_HOOK"
_RECORDS = "processes.txt"
_ADAPTER_PACKAGES = ("npu_bridge", "hccl", "npu_device")


def _record(folder, **fields):
    """One line (a dict's repr: no module to import) in the command's list of Python processes, read by `run` when
    the command ends."""
    fields.update(pid=os.getpid(), parent=os.getppid())
    line = (repr(fields) + "\n").encode()
    descriptor = os.open(os.path.join(folder, _RECORDS), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, line)  # one write of an O_APPEND file: lines of several processes do not interleave
    finally:
        os.close(descriptor)


class _AdapterOnFirstImport:
    """Serves the adapter's import paths from the first import of one of them (a `-c` or `-m` program)."""

    @classmethod
    def find_spec(cls, name, path=None, target=None):
        if name.partition(".")[0] not in _ADAPTER_PACKAGES:
            return None
        sys.meta_path.remove(cls)
        from npu_bridge_compat.legacy import install_aliases

        install_aliases()
        for finder in sys.meta_path:
            found = getattr(finder, "find_spec", None)
            spec = found(name, path, target) if found is not None else None
            if spec is not None:
                return spec
        return None


def _module_run(orig_argv, argv):
    """The module a `python -m MODULE` process runs (argv[0] is still "-m" when sitecustomize is imported)."""
    return orig_argv[len(orig_argv) - len(argv)] if len(orig_argv) > len(argv) else ""


def _installed(path):
    """Whether a script is an installed program (pip, a library's console script): below this Python's prefixes,
    or in the bin folder of a virtual environment."""
    real = os.path.realpath(path)
    roots = {os.path.realpath(root) for root in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    in_environment = os.path.isfile(os.path.join(os.path.dirname(os.path.dirname(real)), "pyvenv.cfg"))
    return in_environment or any(real.startswith(root + os.sep) for root in roots)


def _start(folder):
    argv, orig_argv = sys.argv, getattr(sys, "orig_argv", [sys.executable, *sys.argv])
    first = argv[0] if argv else ""
    if first not in ("", "-", "-c", "-m") and os.path.isfile(first) and not _installed(first):
        import importlib.util

        if importlib.util.find_spec("npu_bridge_compat") is None:
            sys.stderr.write(f"npu_bridge_compat: {sys.executable} has no npu_bridge_compat: {first} runs as it is\n")
            _record(folder, command=orig_argv, served="none: this Python has no npu_bridge_compat")
            return True
        options = orig_argv[1 : len(orig_argv) - len(argv)]
        os.execv(sys.executable, [sys.executable, *options, "-m", "npu_bridge_compat.processes", *argv])
    if first == "-m" and _module_run(orig_argv, argv).partition(".")[0] == "npu_bridge_compat":
        return True  # run, launch, or a script's start above: they serve the worlds themselves
    sys.meta_path.insert(0, _AdapterOnFirstImport)
    _record(folder, command=orig_argv, served="adapter")
    return True


def _chain_user_sitecustomize(folder):
    """Run the sitecustomize this hook hides, found where Python would have found it without the hook."""
    import importlib.machinery  # importlib.util would cost every process of the command its imports

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", sys.path)
    if spec is None or spec.origin is None or os.path.dirname(os.path.abspath(spec.origin)) == folder:
        return
    module = type(sys)(spec.name)
    module.__spec__, module.__loader__, module.__file__ = spec, spec.loader, spec.origin
    module.__cached__ = spec.cached
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _hook():
    folder = os.path.dirname(os.path.abspath(__file__))
    if os.environ.get(_FOLDER_VARIABLE) == folder:
        sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or os.curdir) != folder]
        _start(folder)
    _chain_user_sitecustomize(folder)


_hook()
