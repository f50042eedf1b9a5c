"""The ports' NumPy and Python era: the names ported programs, written for NumPy < 1.24 and Python 3.7, use and
today's NumPy and Python removed, and where each lives now. The one table behind the era world's filled-in names,
its served modules, its warnings and its name status (`ERA.status`).

`FILLED` lists today's modules that lack names of the era (numpy, collections, time, inspect): those names resolve,
when read, from the module's entry (its `__getattr__`, as PEP 562 defines it). `MODULES` lists whole modules that
Python 3.12 removed (imp, distutils): the era world's finder serves them where today has none. Every name the era
serves is in `differs`, whose sentence is the warning (once per name, at the program's line), the README line and
the scan detail; a name with no faithful counterpart is in `missing`, saying what replaces it.
"""

from __future__ import annotations

import collections.abc

from npu_bridge_compat.imports.world import Module

HERE = "npu_bridge_compat.legacy.era.counterparts"
IMP = "npu_bridge_compat.legacy.era.imp"

# NumPy 1.24 removed the aliases of Python's own types (deprecated since NumPy 1.20): np.float was float.
_PYTHON_TYPES = {
    "float": "float",
    "int": "int",
    "bool": "bool",
    "object": "object",
    "str": "str",
    "long": "int",
    "unicode": "str",
    "complex": "complex",
}
# NumPy 2.0 removed these spellings (NEP 52); each has a documented counterpart.
_NUMPY_2_RENAMED = {
    "float_": "numpy.float64",
    "complex_": "numpy.complex128",
    "string_": "numpy.bytes_",
    "unicode_": "numpy.str_",
    "bool8": "numpy.bool_",
    "int0": "numpy.intp",
    "uint0": "numpy.uintp",
    "object0": "numpy.object_",
    "str0": "numpy.str_",
    "bytes0": "numpy.bytes_",
    "void0": "numpy.void",
    "longfloat": "numpy.longdouble",
    "singlecomplex": "numpy.complex64",
    "cfloat": "numpy.complex128",
    "longcomplex": "numpy.clongdouble",
    "clongfloat": "numpy.clongdouble",
    "NaN": "numpy.nan",
    "NAN": "numpy.nan",
    "Inf": "numpy.inf",
    "Infinity": "numpy.inf",
    "PINF": "numpy.inf",
    "infty": "numpy.inf",
    "NINF": f"{HERE}.NINF",
    "PZERO": f"{HERE}.PZERO",
    "NZERO": f"{HERE}.NZERO",
    "product": "numpy.prod",
    "cumproduct": "numpy.cumprod",
    "alltrue": "numpy.all",
    "sometrue": "numpy.any",
    "round_": "numpy.round",
    "row_stack": "numpy.vstack",
    "mat": "numpy.asmatrix",
    "trapz": "numpy.trapezoid",
    "asfarray": f"{HERE}.asfarray",
    "msort": f"{HERE}.msort",
    "cast": f"{HERE}.cast",
    "in1d": f"{HERE}.in1d",
}
_SHOWN = {
    "NINF": "-np.inf",
    "PZERO": "0.0",
    "NZERO": "-0.0",
    "asfarray": "np.asarray(a, dtype=<a float type>)",
    "msort": "np.sort(a, axis=0)",
    "cast": "np.asarray(x).astype(dtype) (np.cast[dtype](x))",
    "in1d": "np.isin(np.ravel(a), b)",
}

NUMPY = Module(
    names={
        **{name: f"builtins.{python}" for name, python in _PYTHON_TYPES.items()},
        **_NUMPY_2_RENAMED,
        "asscalar": f"{HERE}.asscalar",
        "loads": "pickle.loads",
    },
    differs={
        **{
            name: f"NumPy 1.24 removed np.{name}, which was Python's {python}: served as {python}"
            for name, python in _PYTHON_TYPES.items()
        },
        **{
            name: f"NumPy 2.0 removed np.{name}: served as "
            + _SHOWN.get(name, target.replace("numpy.", "np.") if target.startswith("numpy.") else target)
            for name, target in _NUMPY_2_RENAMED.items()
        },
        "asscalar": "NumPy 1.23 removed np.asscalar(a): served as a.item()",
        "loads": "NumPy removed np.loads: served as pickle.loads",
    },
    missing={
        "find_common_type": "removed in NumPy 2.0; np.result_type or np.promote_types replace it (their arguments "
        "differ)",
        "obj2sctype": "removed in NumPy 2.0; np.dtype(obj).type replaces it",
        "typeDict": "removed in NumPy 1.21; np.sctypeDict replaces it",
    },
)

_ABCS = collections.abc.__all__
COLLECTIONS = Module(
    names={name: f"collections.abc.{name}" for name in _ABCS},
    differs={
        name: f"Python 3.10 removed the ABC aliases from collections: served as collections.abc.{name}"
        for name in _ABCS
    },
)

FILLED: dict[str, Module] = {
    "numpy": NUMPY,
    "collections": COLLECTIONS,
    "time": Module(
        names={"clock": "time.perf_counter"},
        differs={
            "clock": "Python 3.8 removed time.clock: served as time.perf_counter (seconds of wall-clock time, for "
            "timing; on Linux time.clock counted the process's CPU time, time.process_time)"
        },
    ),
    "inspect": Module(
        names={"getargspec": f"{HERE}.getargspec", "ArgSpec": f"{HERE}.ArgSpec"},
        differs={
            "getargspec": "Python 3.11 removed inspect.getargspec: served on inspect.getfullargspec (its four "
            "fields, keywords being varkw)",
            "ArgSpec": "Python 3.11 removed inspect.ArgSpec: served as a namedtuple of the same four fields",
        },
    ),
}

_IMP_NAMES = (
    "SEARCH_ERROR PY_SOURCE PY_COMPILED C_EXTENSION PY_RESOURCE PKG_DIRECTORY C_BUILTIN PY_FROZEN reload "
    "cache_from_source source_from_cache new_module get_magic get_suffixes find_module load_source load_compiled "
    "load_dynamic load_package load_module acquire_lock release_lock lock_held is_builtin is_frozen"
).split()
NO_SETUPTOOLS = (
    "Python 3.12 removed distutils, and setuptools, which keeps a copy of it, is not installed: pip install "
    "setuptools (or use packaging.version, sysconfig and shutil, which replace its parts)"
)

MODULES: dict[str, Module] = {
    "imp": Module(
        sources=(IMP,),
        differs={name: f"Python 3.12 removed the imp module: imp.{name} is served on importlib" for name in _IMP_NAMES},
        missing={
            name: "removed with the imp module in Python 3.12, without a counterpart in importlib"
            for name in ("init_builtin", "init_frozen", "NullImporter", "get_frozen_object", "is_frozen_package")
        },
        note="Python 3.7's imp, on importlib",
    ),
    "distutils": Module(sources=("setuptools._distutils",)),  # setuptools' own copy, served as itself
    "xml.etree.cElementTree": Module(sources=("xml.etree.ElementTree",)),  # removed in Python 3.9
}
