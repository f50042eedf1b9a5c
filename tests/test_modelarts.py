"""ModelArts programs under `run`: moxing's file API on local paths, on obs:// URLs mapped to a folder (--obs-root)
and on objects of a real S3-compatible server started here on 127.0.0.1 (moto's server mode), its errors, what an
interrupted copy leaves (nothing), `shift`, the flags, the stand-ins of its training framework, and programs that
copy their data with it and write their checkpoints back."""

import builtins
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from npu_bridge_compat import changes
from npu_bridge_compat.imports.world import NoCounterpartError, Status
from npu_bridge_compat.legacy.modelarts import (
    FILE_API,
    MODELARTS,
    OWNER,
    STORAGE,
    ObjectStorageError,
    use_obs_root,
)
from npu_bridge_compat.legacy.modelarts.flags import FLAG_VALUES
from npu_bridge_compat.legacy.modelarts.storage import ACCESS_KEY_VARIABLES, CLIENTS, SAID, parse_object_url

boto3 = pytest.importorskip("boto3")
moto_server = pytest.importorskip("moto.server")

HERE = Path(__file__).parent
LOOPBACK = "127.0.0.1"
AK, SK = "test-access-key", "test-secret-key"
# Every mox.* name ModelZoo-TensorFlow's scripts call (counted over the mirror), as `import moxing as mox` reads them.
MODELZOO_NAMES = (
    "file.copy_parallel",
    "file.make_dirs",
    "file.exists",
    "file.list_directory",
    "file.copy",
    "file.is_directory",
    "file.File",
    "file.read",
    "set_flag",
    "file.set_auth",
    "file.shift",
    "file.mk_dir",
    "run",
    "ModelSpec",
    "get_optimizer_fn",
)


@pytest.fixture(scope="module")
def s3_endpoint():
    server = moto_server.ThreadedMotoServer(ip_address=LOOPBACK, port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    assert host == LOOPBACK
    yield f"http://{host}:{port}"
    server.stop()


def s3_environment(endpoint: str) -> dict[str, str]:
    return {"AWS_ENDPOINT_URL": endpoint, "OBS_ACCESS_KEY_ID": AK, "OBS_SECRET_ACCESS_KEY": SK}


def s3_client(endpoint: str):
    return boto3.client(
        "s3", endpoint_url=endpoint, aws_access_key_id=AK, aws_secret_access_key=SK, region_name="us-east-1"
    )


def new_bucket(endpoint: str) -> str:
    bucket = f"bucket-{uuid.uuid4().hex[:12]}"
    s3_client(endpoint).create_bucket(Bucket=bucket)
    return bucket


@pytest.fixture(autouse=True)
def storage_undone(monkeypatch, fresh_state):
    """Each test starts with no endpoint or key variables of the host's and the world's state fresh (no clients,
    nothing said, no flags), and ends with the world undone."""
    for name in ("S3_ENDPOINT", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", *ACCESS_KEY_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    fresh_state(CLIENTS, SAID, FLAG_VALUES)
    yield
    changes.undo(owner=OWNER)


@dataclass
class Place:
    """Where a test's files live, and a way to put and get them without the API under test."""

    kind: str
    root: str  # a local folder, or obs://bucket
    folder: Path | None = None  # the files' folder (local, --obs-root)
    client: Any = None
    bucket: str = ""

    def url(self, relative: str) -> str:
        return f"{self.root}/{relative}" if self.kind != "local" else os.path.join(self.root, relative)

    def put(self, relative: str, data: bytes) -> None:
        if self.client is not None:
            self.client.put_object(Bucket=self.bucket, Key=relative, Body=data)
        else:
            path = self.folder / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)

    def get(self, relative: str) -> bytes:
        if self.client is not None:
            return self.client.get_object(Bucket=self.bucket, Key=relative)["Body"].read()
        return (self.folder / relative).read_bytes()

    def files(self) -> list[str]:
        """Every file held (object keys without folder markers), sorted."""
        if self.client is not None:
            listed = self.client.list_objects_v2(Bucket=self.bucket).get("Contents", [])
            return sorted(entry["Key"] for entry in listed if not entry["Key"].endswith("/"))
        return sorted(str(path.relative_to(self.folder)) for path in self.folder.rglob("*") if path.is_file())


@pytest.fixture(params=["local", "obs_root", "s3"])
def place(request, tmp_path, monkeypatch):
    if request.param == "local":
        folder = tmp_path / "store"
        folder.mkdir()
        return Place("local", str(folder), folder)
    if request.param == "obs_root":
        use_obs_root(str(tmp_path))
        (tmp_path / "bucket").mkdir()
        return Place("obs_root", "obs://bucket", tmp_path / "bucket")
    endpoint = request.getfixturevalue("s3_endpoint")
    for name, value in s3_environment(endpoint).items():
        monkeypatch.setenv(name, value)
    bucket = new_bucket(endpoint)
    return Place("s3", f"obs://{bucket}", client=s3_client(endpoint), bucket=bucket)


def put_tree(place: Place) -> None:
    place.put("data/a.txt", b"alpha")
    place.put("data/sub/b.bin", bytes(range(256)))
    place.put("data/sub/deeper/c.txt", b"gamma")


# --- the file API, on each kind of place ---------------------------------------------------------------------------


def test_copy_parallel_copies_a_folder_recursively_both_ways_and_a_file(place, tmp_path):
    put_tree(place)
    local = tmp_path / "cache" / "data"
    FILE_API.copy_parallel(place.url("data"), str(local), threads=4)
    assert sorted(str(p.relative_to(local)) for p in local.rglob("*") if p.is_file()) == [
        "a.txt",
        "sub/b.bin",
        "sub/deeper/c.txt",
    ]
    assert (local / "sub" / "b.bin").read_bytes() == bytes(range(256))
    FILE_API.copy_parallel(str(local), place.url("back"))
    assert place.get("back/sub/deeper/c.txt") == b"gamma"
    FILE_API.copy_parallel(place.url("data/a.txt"), place.url("single.txt"))
    assert place.get("single.txt") == b"alpha"
    FILE_API.copy_parallel(place.url("data"), place.url("only"), file_list=["sub/b.bin"])
    assert [name for name in place.files() if name.startswith("only/")] == ["only/sub/b.bin"]


def test_copy_copies_one_file_either_way_and_refuses_a_folder(place, tmp_path):
    put_tree(place)
    FILE_API.copy(place.url("data/a.txt"), str(tmp_path / "x" / "a.txt"))
    assert (tmp_path / "x" / "a.txt").read_bytes() == b"alpha"
    (tmp_path / "up.txt").write_bytes(b"up")
    FILE_API.copy(str(tmp_path / "up.txt"), place.url("up/up.txt"))
    FILE_API.copy(place.url("up/up.txt"), place.url("up/again.txt"))
    assert place.get("up/again.txt") == b"up"
    with pytest.raises(IsADirectoryError):
        FILE_API.copy(str(tmp_path / "x"), place.url("folder"))


def test_exists_is_directory_and_list_directory(place):
    put_tree(place)
    assert FILE_API.exists(place.url("data")) and FILE_API.exists(place.url("data/a.txt"))
    assert not FILE_API.exists(place.url("data/none.txt"))
    assert FILE_API.is_directory(place.url("data/sub")) and not FILE_API.is_directory(place.url("data/a.txt"))
    assert FILE_API.list_directory(place.url("data")) == ["a.txt", "sub"]
    assert FILE_API.list_directory(place.url("data"), recursive=True) == [
        "a.txt",
        "sub",
        "sub/b.bin",
        "sub/deeper",
        "sub/deeper/c.txt",
    ]


def test_glob_and_walk(place):
    put_tree(place)
    assert FILE_API.glob(place.url("data/*.txt")) == [place.url("data/a.txt")]
    assert FILE_API.glob(place.url("data/s*")) == [place.url("data/sub")]
    walked = [(folder, sorted(folders), sorted(files)) for folder, folders, files in FILE_API.walk(place.url("data"))]
    assert walked == [
        (place.url("data"), ["sub"], ["a.txt"]),
        (place.url("data/sub"), ["deeper"], ["b.bin"]),
        (place.url("data/sub/deeper"), [], ["c.txt"]),
    ]


def test_make_dirs_mk_dir_remove_and_rename(place):
    FILE_API.make_dirs(place.url("out/a/b"))
    assert FILE_API.is_directory(place.url("out/a/b"))
    FILE_API.mk_dir(place.url("out/c"))
    assert FILE_API.list_directory(place.url("out")) == ["a", "c"]
    put_tree(place)
    FILE_API.rename(place.url("data/a.txt"), place.url("moved/a.txt"))
    assert place.get("moved/a.txt") == b"alpha" and not FILE_API.exists(place.url("data/a.txt"))
    FILE_API.rename(place.url("data/sub"), place.url("moved/sub"))
    assert place.get("moved/sub/deeper/c.txt") == b"gamma" and not FILE_API.exists(place.url("data/sub"))
    with pytest.raises(IsADirectoryError, match="recursive=True"):
        FILE_API.remove(place.url("moved"))
    FILE_API.remove(place.url("moved/a.txt"))
    assert not FILE_API.exists(place.url("moved/a.txt"))
    FILE_API.remove(place.url("moved"), recursive=True)
    assert not FILE_API.exists(place.url("moved"))
    with pytest.raises(FileNotFoundError):
        FILE_API.remove(place.url("moved/none"))


def test_read_write_append_get_size_and_stat(place):
    FILE_API.write(place.url("t/notes.txt"), "first")
    FILE_API.append(place.url("t/notes.txt"), " second")
    assert FILE_API.read(place.url("t/notes.txt")) == "first second"
    FILE_API.write(place.url("t/raw.bin"), b"\x00\x01", binary=True)
    FILE_API.append(place.url("t/raw.bin"), b"\x02", binary=True)
    assert FILE_API.read(place.url("t/raw.bin"), binary=True) == b"\x00\x01\x02"
    with pytest.raises(TypeError, match="binary=True"):
        FILE_API.write(place.url("t/raw.bin"), b"bytes")
    assert FILE_API.get_size(place.url("t/notes.txt")) == 12
    assert FILE_API.get_size(place.url("t"), recursive=True) == 15
    stat = FILE_API.stat(place.url("t/raw.bin"))
    assert stat.length == 3 and not stat.is_directory and stat.mtime_nsec > 0
    assert FILE_API.stat(place.url("t")).is_directory


def test_file_objects_in_every_mode_and_nothing_written_when_the_block_fails(place):
    with FILE_API.File(place.url("f/text.txt"), "w") as file:
        file.write("line 1\n")
    with FILE_API.File(place.url("f/text.txt"), "a") as file:
        file.write("line 2\n")
    with FILE_API.File(place.url("f/text.txt")) as file:
        assert file.readlines() == ["line 1\n", "line 2\n"]
    with FILE_API.File(place.url("f/data.bin"), "wb") as file:
        file.write(b"\x10")
    with FILE_API.File(place.url("f/data.bin"), "ab") as file:
        file.write(b"\x20")
    with FILE_API.File(place.url("f/data.bin"), "rb") as file:
        assert file.read() == b"\x10\x20"
    with pytest.raises(RuntimeError), FILE_API.File(place.url("f/failed.txt"), "w") as file:
        file.write("half")
        raise RuntimeError("the program failed while writing")
    assert place.files() == ["f/data.bin", "f/text.txt"]
    with pytest.raises(ValueError, match="mode must be one of"):
        FILE_API.File(place.url("f/text.txt"), "r+")


def test_shift_makes_os_and_open_take_urls_until_shifted_back(place):
    if place.kind == "local":
        pytest.skip("shift concerns URLs")
    original_open, original_exists = builtins.open, os.path.exists
    FILE_API.shift("os", "mox")
    os.makedirs(place.url("shifted/folder"))
    with open(place.url("shifted/folder/note.txt"), "w") as file:
        file.write("through open")
    assert os.path.exists(place.url("shifted/folder/note.txt")) and os.path.isdir(place.url("shifted/folder"))
    assert os.listdir(place.url("shifted/folder")) == ["note.txt"]
    assert os.path.getsize(place.url("shifted/folder/note.txt")) == 12
    assert place.get("shifted/folder/note.txt") == b"through open"
    assert os.path.exists(__file__)  # a local path reaches the function shift replaced
    FILE_API.shift("mox", "os")
    assert builtins.open is original_open and os.path.exists is original_exists
    FILE_API.shift("os", "mox")
    changes.undo(owner=OWNER)  # undoing the world undoes the shift too
    assert builtins.open is original_open and os.path.exists is original_exists


def test_set_auth_gives_the_endpoint_and_keys(s3_endpoint, monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID", raising=False)
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
    bucket = new_bucket(s3_endpoint)
    host_and_port = s3_endpoint.removeprefix("http://")
    FILE_API.set_auth(ak=AK, sk=SK, server=host_and_port, is_secure=False, obs_client_log=False)
    FILE_API.write(f"obs://{bucket}/auth.txt", "with set_auth")
    assert s3_client(s3_endpoint).get_object(Bucket=bucket, Key="auth.txt")["Body"].read() == b"with set_auth"
    assert "mox.file.set_auth(server=...)" in STORAGE.describe() and "set_auth(ak=..., sk=...)" in STORAGE.describe()
    FILE_API.set_auth(retry=50)  # moxing's other options keep what was set
    assert STORAGE.settings.access_key == AK and STORAGE.settings.retries == 50
    with pytest.raises(ObjectStorageError, match="give ak and sk together"):
        FILE_API.set_auth(ak=AK)
    changes.undo(owner=OWNER)
    assert STORAGE.settings.access_key is None


def test_the_obs_root_maps_urls_to_files_and_says_so(tmp_path):
    said = use_obs_root(str(tmp_path))
    assert said == (f"obs:// and s3:// URLs are files under {tmp_path} (run --obs-root): obs://b/k is {tmp_path}/b/k")
    assert STORAGE.locate("obs://bkt/a/b.txt") == str(tmp_path / "bkt" / "a" / "b.txt")
    assert STORAGE.locate("s3://bkt/c") == str(tmp_path / "bkt" / "c")
    assert STORAGE.locate("relative/path") == "relative/path"
    changes.undo(owner=OWNER)
    assert STORAGE.settings.obs_root is None


# --- errors --------------------------------------------------------------------------------------------------------


def test_an_unknown_scheme_names_the_url_and_the_schemes_read():
    with pytest.raises(ObjectStorageError) as raised:
        FILE_API.exists("hdfs://cluster/data")
    assert str(raised.value) == (
        "hdfs://cluster/data: unknown URL scheme 'hdfs://': moxing's file API under `run` reads local paths, "
        "obs://bucket/key and s3://bucket/key"
    )


def test_missing_credentials_name_the_variables_and_the_options(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{LOOPBACK}:9")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ObjectStorageError) as raised:
        FILE_API.copy_parallel("obs://bucket/data", str(tmp_path / "cache"))
    assert str(raised.value) == (
        "obs://bucket/data: no credentials for object storage: set OBS_ACCESS_KEY_ID and OBS_SECRET_ACCESS_KEY (or "
        "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), call mox.file.set_auth(ak=..., sk=...), or map obs:// URLs to "
        "a local folder with `run --obs-root DIR`"
    )
    assert not (tmp_path / "cache").exists()


def test_no_endpoint_for_obs_urls_names_the_variable():
    with pytest.raises(ObjectStorageError, match=r"^obs://bucket/k: no object-storage endpoint for obs:// URLs: set "):
        FILE_API.exists("obs://bucket/k")


def test_an_endpoint_that_refuses_names_the_url_and_what_to_check(monkeypatch):
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind((LOOPBACK, 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{LOOPBACK}:{port}")
    monkeypatch.setenv("OBS_ACCESS_KEY_ID", AK)
    monkeypatch.setenv("OBS_SECRET_ACCESS_KEY", SK)
    FILE_API.set_auth(retry=1)
    with pytest.raises(ObjectStorageError) as raised:
        FILE_API.read("obs://bucket/data/a.txt")
    message = str(raised.value)
    assert message.startswith("obs://bucket/data/a.txt: the object-storage endpoint refused the connection (")
    assert f"{LOOPBACK}:{port}" in message and "AWS_ENDPOINT_URL" in message and "--obs-root" in message


# --- nothing left behind ------------------------------------------------------------------------------------------


def test_an_interrupted_local_copy_leaves_no_file(tmp_path, monkeypatch):
    (tmp_path / "big.bin").write_bytes(b"x" * 4096)

    def copy_half_then_fail(source, destination):
        Path(destination).write_bytes(b"x" * 100)
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "copyfile", copy_half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        FILE_API.copy(str(tmp_path / "big.bin"), str(tmp_path / "out" / "big.bin"))
    assert os.listdir(tmp_path / "out") == []


def test_an_interrupted_upload_leaves_no_object_and_no_open_multipart_upload(place, tmp_path):
    if place.kind != "s3":
        pytest.skip("uploads concern object storage")
    (tmp_path / "big.bin").write_bytes(os.urandom(9 * 1024 * 1024))  # over boto3's 8 MiB: a multipart upload

    def interrupt(sent: int) -> None:
        raise ConnectionAbortedError("the upload was interrupted")

    with pytest.raises(ConnectionAbortedError, match="the upload was interrupted"):
        FILE_API.copy(str(tmp_path / "big.bin"), place.url("up/big.bin"), callback=interrupt)
    assert place.files() == []
    assert place.client.list_multipart_uploads(Bucket=place.bucket).get("Uploads", []) == []


def test_an_interrupted_download_leaves_no_file(place, tmp_path, monkeypatch):
    if place.kind != "s3":
        pytest.skip("downloads concern object storage")
    place.put("data/a.bin", b"y" * 2048)
    client = STORAGE.client(parse_object_url(place.url("data/a.bin")))

    def half_then_fail(bucket, key, file, **kwargs):
        file.write(b"y" * 100)
        raise ConnectionResetError("the connection dropped")

    monkeypatch.setattr(client, "download_fileobj", half_then_fail)
    with pytest.raises(ConnectionResetError):
        FILE_API.copy_parallel(place.url("data"), str(tmp_path / "cache"))
    assert list((tmp_path / "cache").rglob("*")) == []


# --- the world: moxing's names under `run` -------------------------------------------------------------------------


def test_every_mox_name_modelzoo_calls_resolves():
    assert MODELARTS.install()
    import moxing as mox

    served = {}
    for dotted in MODELZOO_NAMES:
        value = mox
        for part in dotted.split("."):
            value = getattr(value, part)
        served[dotted] = value
        assert MODELARTS.status(f"moxing.{dotted}").status is not Status.UNKNOWN
    assert served["file.copy_parallel"] == FILE_API.copy_parallel and callable(served["file.File"])
    mox.set_flag("gradient_clip", 5.0)
    assert mox.get_flag("gradient_clip") == 5.0
    for name in ("run", "ModelSpec", "get_optimizer_fn"):
        with pytest.raises(NoCounterpartError, match=rf"^moxing\.{name} \(ModelArts' moxing\) has no counterpart"):
            served[name]()
    import moxing.tensorflow as mox_tf

    assert mox_tf.file.exists == FILE_API.exists
    with pytest.raises(NoCounterpartError, match="mox.run, ModelSpec, get_optimizer_fn"):
        mox_tf.run(lambda: None)
    with pytest.raises(AttributeError, match="did you mean moxing.file.copy_parallel"):
        mox.file.copy_paralel  # noqa: B018 - the misspelling a program could make


def test_the_world_is_undone_with_its_modules():
    assert MODELARTS.install()
    import moxing  # noqa: F401

    changes.undo(owner=OWNER)
    assert "moxing" not in sys.modules and "moxing.file" not in sys.modules
    with pytest.raises(ModuleNotFoundError):
        import moxing  # noqa: F401, F811


# --- programs under `run` ------------------------------------------------------------------------------------------


def run(*arguments: str, env: dict[str, str] | None = None, cwd: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", *arguments],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, **(env or {})},
    )


def synthetic_data(put) -> None:
    import numpy as np

    random = np.random.RandomState(0)
    features = random.normal(size=(64, 4)).astype("float32")
    labels = features @ np.array([[1.0], [-2.0], [0.5], [3.0]], "float32")
    for name, array in (("features", features), ("labels", labels)):
        buffer = __import__("io").BytesIO()
        np.save(buffer, array)
        put(f"data/train/{name}.npy", buffer.getvalue())


def check_trained(result: subprocess.CompletedProcess) -> dict:
    assert result.returncode == 0, result.stderr[-4000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["copied"] == ["train", "train/features.npy", "train/labels.npy"]
    assert report["last_loss"] < 0.1 * report["first_loss"]
    assert {"checkpoint", "model.ckpt-30.index", "losses.txt"} <= set(report["uploaded"])
    return report


@pytest.mark.starts_processes
def test_a_modelarts_program_trains_against_object_storage(s3_endpoint, tmp_path):
    bucket = new_bucket(s3_endpoint)
    client = s3_client(s3_endpoint)
    synthetic_data(lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data))
    result = run(
        "--tf1",
        str(HERE / "scripts" / "modelarts_port.py"),
        f"--data_url=obs://{bucket}/data",
        f"--train_url=obs://{bucket}/output/",
        f"--cache_dir={tmp_path / 'cache'}",
        env=s3_environment(s3_endpoint),
    )
    report = check_trained(result)
    keys = {entry["Key"] for entry in client.list_objects_v2(Bucket=bucket, Prefix="output/")["Contents"]}
    assert {"output/checkpoint", "output/model.ckpt-30.index", "output/model.ckpt-30.meta"} <= keys
    losses = client.get_object(Bucket=bucket, Key="output/losses.txt")["Body"].read().decode().split()
    assert [float(value) for value in losses] == [report["first_loss"], report["last_loss"]]
    assert (
        f"npu_bridge_compat: moxing: obs:// and s3:// URLs are objects of the S3-compatible endpoint {s3_endpoint} "
        "(AWS_ENDPOINT_URL), through boto3; credentials: OBS_ACCESS_KEY_ID / OBS_SECRET_ACCESS_KEY "
        f"(first: obs://{bucket}/data)"
    ) in result.stderr


@pytest.mark.starts_processes
def test_a_modelarts_program_trains_with_its_buckets_in_a_folder(tmp_path):
    root = tmp_path / "buckets"

    def put(key: str, data: bytes) -> None:
        path = root / "mzbucket" / key
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    synthetic_data(put)
    result = run(
        "--tf1",
        "--obs-root",
        str(root),
        str(HERE / "scripts" / "modelarts_port.py"),
        "--data_url=obs://mzbucket/data",
        "--train_url=obs://mzbucket/output",
        f"--cache_dir={tmp_path / 'cache'}",
    )
    check_trained(result)
    assert (root / "mzbucket" / "output" / "model.ckpt-30.index").is_file()
    assert f"npu_bridge_compat: obs:// and s3:// URLs are files under {root} (run --obs-root)" in result.stderr


@pytest.mark.starts_processes
def test_a_tf2_program_gets_moxing_too(tmp_path):
    (tmp_path / "buckets" / "b" / "in").mkdir(parents=True)
    (tmp_path / "buckets" / "b" / "in" / "x.txt").write_text("tf2")
    script = tmp_path / "tf2_modelarts.py"
    script.write_text(
        "import tensorflow as tf\n"
        "import moxing.tensorflow as mox\n"
        "mox.file.copy_parallel('obs://b/in', 'obs://b/out')\n"
        "print(tf.executing_eagerly(), mox.file.read('obs://b/out/x.txt'))\n"
    )
    result = run("--tf2", "--obs-root", str(tmp_path / "buckets"), str(script))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == "True tf2"


@pytest.mark.starts_processes
def test_an_obs_root_that_is_no_folder_is_refused_before_the_program_starts(tmp_path):
    result = run("--obs-root", str(tmp_path / "none"), str(HERE / "scripts" / "modelarts_port.py"))
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1] == (
        f"error: --obs-root {tmp_path / 'none'}: no such folder: make it, or name the folder the buckets are in"
    )


# --- a real ModelZoo program: a ModelZoo-TensorFlow checkout named by NPU_BRIDGE_COMPAT_MODELZOO (none in CI) -------

MODELZOO_ALEXNET = (
    Path(os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO", "/nonexistent"))
    / "TensorFlow/built-in/cv/image_classification/AlexNet_ID0072_for_TensorFlow"
)
ALEXNET_CACHE = ("/cache/data_dir_alexnet", "/cache/ckpt_alexnet")  # the start script's own literal folders


def write_imagenet_records(put) -> None:
    """ImageNet-format TFRecords as AlexNet's data loader reads them: ten classes, each a colour of its own."""
    import numpy as np
    import tensorflow as tf

    random = np.random.RandomState(0)
    for split, shards, per_shard in (("train", 2, 160), ("validation", 1, 40)):
        for shard in range(shards):
            records = []
            for index in range(per_shard):
                label = index % 10
                colour = np.array([25 * label, 255 - 25 * label, (80 * label) % 255], np.float32)
                pixels = np.clip(colour + random.normal(0, 20, (64, 64, 3)), 0, 255).astype(np.uint8)
                feature = {
                    "image/encoded": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[tf.io.encode_jpeg(pixels).numpy()])
                    ),
                    "image/class/label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label + 1])),
                }
                records.append(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
            path = Path(os.environ.get("TMPDIR", "/tmp")) / f"alexnet-{uuid.uuid4().hex}"
            with tf.io.TFRecordWriter(str(path)) as writer:
                for record in records:
                    writer.write(record)
            put(f"imagenet/{split}-{shard:05d}-of-{shards:05d}", path.read_bytes())
            path.unlink()


@pytest.mark.starts_processes
@pytest.mark.skipif(not MODELZOO_ALEXNET.is_dir(), reason="needs a ModelZoo-TensorFlow checkout")
@pytest.mark.parametrize("storage", ["s3", "obs_root"])
def test_modelzoo_alexnet_copies_its_data_and_checkpoints_through_moxing(storage, tmp_path, request):
    """AlexNet's ModelArts start script, unmodified: copy_parallel of --data_url to /cache, NPUEstimator training,
    copy_parallel of its checkpoints to --train_url."""
    for folder in ALEXNET_CACHE:
        shutil.rmtree(folder, ignore_errors=True)
    environment = {"RANK_ID": "0", "RANK_SIZE": "1", "PYTHONPATH": str(MODELZOO_ALEXNET)}
    arguments = ["--tf1"]
    if storage == "s3":
        endpoint = request.getfixturevalue("s3_endpoint")
        bucket = new_bucket(endpoint)
        client = s3_client(endpoint)
        write_imagenet_records(lambda key, data: client.put_object(Bucket=bucket, Key=key, Body=data))
        environment.update(s3_environment(endpoint))

        def outputs() -> set[str]:
            listed = client.list_objects_v2(Bucket=bucket, Prefix="alexnet/")["Contents"]
            return {entry["Key"].removeprefix("alexnet/") for entry in listed}
    else:
        bucket = "mzbucket"
        root = tmp_path / "buckets"

        def put(key: str, data: bytes) -> None:
            (root / bucket / key).parent.mkdir(parents=True, exist_ok=True)
            (root / bucket / key).write_bytes(data)

        write_imagenet_records(put)
        arguments += ["--obs-root", str(root)]

        def outputs() -> set[str]:
            return {path.name for path in (root / bucket / "alexnet").iterdir()}

    result = run(
        *arguments,
        "modelarts/start.py",
        f"--data_url=obs://{bucket}/imagenet",
        f"--train_url=obs://{bucket}/alexnet/",
        "--batch_size=8",
        "--max_train_steps=20",
        "--iterations_per_loop=10",
        "--num_classes=10",
        "--max_epochs=1",
        "--warmup_epochs=1",
        "--lr=0.001",
        "--freeze_pb=False",
        env=environment,
        cwd=str(MODELZOO_ALEXNET),
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "training steps: 20" in result.stdout
    assert {"checkpoint", "model.ckpt-20.index", "model.ckpt-20.data-00000-of-00001"} <= outputs()


# --- what scan and explain say -------------------------------------------------------------------------------------


def test_scan_lists_moxing_names_and_where_each_object_url_goes(tmp_path, monkeypatch):
    from npu_bridge_compat.plan import HostFacts
    from npu_bridge_compat.scan import Category, Severity, scan

    monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://{LOOPBACK}:9000")
    monkeypatch.setenv("OBS_ACCESS_KEY_ID", AK)
    (tmp_path / "train.py").write_text(
        "import moxing as mox\n"
        "mox.file.copy_parallel('obs://bucket/data', '/cache/data')\n"
        "mox.file.copy_paralel('/cache/out', 's3://bucket/out')\n"
        "mox.run()\n"
    )
    findings = scan([str(tmp_path)], host=HostFacts(tf_version="2.15.1", gpu_count=0)).scripts[0].findings
    shown = [(f.line, f.category, f.name, f.outcome, f.severity) for f in findings]
    assert shown == [
        (1, Category.MODELARTS, "moxing", "works under run", Severity.READY),
        (2, Category.MODELARTS, "moxing.file.copy_parallel", "works under run", Severity.READY),
        (2, Category.OBJECT_URL, "obs://bucket/data", "checked at run time", Severity.READY),
        (3, Category.MODELARTS, "moxing.file.copy_paralel", "missing under run", Severity.BLOCKED),
        (3, Category.OBJECT_URL, "s3://bucket/out", "checked at run time", Severity.READY),
        (4, Category.MODELARTS, "moxing.run", "missing under run", Severity.BLOCKED),
    ]
    details = {f.name: f.detail for f in findings}
    assert details["obs://bucket/data"] == (
        f"obs:// and s3:// URLs are objects of the S3-compatible endpoint http://{LOOPBACK}:9000 (AWS_ENDPOINT_URL), "
        "through boto3; credentials: OBS_ACCESS_KEY_ID / OBS_SECRET_ACCESS_KEY; `run --obs-root DIR` makes it "
        "DIR/bucket/data"
    )
    assert details["moxing.file.copy_paralel"].endswith("did you mean moxing.file.copy_parallel?")


@pytest.mark.starts_processes
def test_explain_says_where_object_urls_go(tmp_path):
    environment = {**os.environ, "S3_ENDPOINT": f"{LOOPBACK}:9000", "S3_USE_HTTPS": "0"}
    explained = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "explain", "--storage"],
        capture_output=True,
        text=True,
        timeout=120,
        env=environment,
    )
    assert explained.returncode == 0, explained.stderr
    assert explained.stdout.startswith(
        f"obs:// and s3:// URLs are objects of the S3-compatible endpoint http://{LOOPBACK}:9000 (S3_ENDPOINT), "
        "through boto3; credentials: "
    )
    mapped = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "explain", "--storage", "--obs-root", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    said = f"obs:// and s3:// URLs are files under {tmp_path} (run --obs-root): obs://b/k is {tmp_path}/b/k\n"
    assert mapped.stdout == said


@pytest.mark.starts_processes
def test_launch_gives_every_rank_the_obs_root(tmp_path):
    (tmp_path / "buckets" / "b").mkdir(parents=True)
    script = tmp_path / "rank_writes.py"
    script.write_text(
        "import os\n"
        "import moxing as mox\n"
        "mox.file.write(f\"obs://b/out/rank_{os.environ['RANK_ID']}.txt\", os.environ['RANK_SIZE'])\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "npu_bridge_compat",
            "launch",
            "-n",
            "2",
            "--tf2",
            "--obs-root",
            str(tmp_path / "buckets"),
        ]
        + [str(script)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    written = {path.name: path.read_text() for path in (tmp_path / "buckets" / "b" / "out").iterdir()}
    assert written == {"rank_0.txt": "2", "rank_1.txt": "2"}
    assert f"launch: in every rank, obs:// and s3:// URLs are files under {tmp_path / 'buckets'}" in result.stderr
    refused = subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "launch", "-n", "2", "--obs-root", str(tmp_path / "none")]
        + [str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert refused.returncode == 2
    assert refused.stderr.strip().splitlines() == [  # said before any rank started
        f"error: --obs-root {tmp_path / 'none'}: no such folder: make it, or name the folder the buckets are in"
    ]
