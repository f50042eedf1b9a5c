"""The ModelArts world: what programs written for Huawei Cloud ModelArts import from its `moxing` package, served
from one table (table.py) by the one engine of the worlds (imports/world.py), as plain data: `mox.file`'s API on
local paths and on obs:// / s3:// URLs (file_api.py; where a URL goes: storage.py), `mox.file.shift('os', 'mox')`
(shift.py), moxing's flags, and NoCounterpartError stand-ins for its training framework.

The world's facts are one `ObjectStorage` (STORAGE): `run --obs-root DIR` (`use_obs_root`) and the program's
`mox.file.set_auth` change its settings through the registry, under the world's owner, so that undoing the world
puts them back with the rest. `run` serves the world to TF 1.15 and TF2 programs alike (legacy/runs.py). Importing
this package changes nothing and imports neither boto3 nor TensorFlow.
"""

from __future__ import annotations

import os

from npu_bridge_compat import changes
from npu_bridge_compat.changes import Owner
from npu_bridge_compat.imports.world import Rules, Status, World
from npu_bridge_compat.legacy.modelarts.file_api import MoxFile
from npu_bridge_compat.legacy.modelarts.storage import ObjectStorage, ObjectStorageError, StorageSettings
from npu_bridge_compat.legacy.modelarts.table import MODULES

__all__ = ["MODELARTS", "STORAGE", "ObjectStorageError", "use_obs_root"]

OWNER = Owner.MODELARTS_WORLD
STORAGE = ObjectStorage()


def _change_settings(settings: StorageSettings) -> None:
    """STORAGE's settings become `settings`, through the registry (a later choice replaces the earlier one)."""
    held = changes.attribute_change(STORAGE, "settings")
    if held is not None:
        changes.undo(changes=[held])
    if settings != STORAGE.settings:
        changes.replace_attribute(
            STORAGE,
            "settings",
            settings,
            owner=OWNER,
            label="moxing's object storage",
            reason="where obs:// and s3:// URLs go (run --obs-root, mox.file.set_auth)",
        )


FILE_API = MoxFile(STORAGE, _change_settings, OWNER)

MODELARTS = World(
    name="modelarts",
    owner=OWNER,
    era="ModelArts' moxing",
    modules=MODULES,
    roots=("moxing",),
    aliases=False,  # every moxing module is one of its own, its names read from the table
    label=" (ModelArts' moxing)",
    rules=Rules(where=lambda path: "this host (npu_bridge_compat's moxing)"),
    serves="moxing, ModelArts' file library (mox.file on local paths and obs:// / s3:// URLs), from its table",
    category="ModelArts name",
    unknown_reported_as=Status.MISSING,  # a closed tree: a moxing name the table does not know raises under `run`
)


def use_obs_root(folder: str) -> str:
    """obs:// and s3:// URLs are files under `folder` (obs://b/k is folder/b/k) for the rest of the process, until
    the world is undone; NpuConfigError naming the option where `folder` is not a folder. Returns the sentence
    saying so."""
    path = os.path.abspath(os.path.expanduser(folder))
    if not os.path.isdir(path):
        raise ObjectStorageError(f"--obs-root {folder}: no such folder: make it, or name the folder the buckets are in")
    _change_settings(StorageSettings(obs_root=path))
    return STORAGE.describe()
