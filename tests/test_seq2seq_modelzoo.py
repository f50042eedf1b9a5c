"""ModelZoo's own seq2seq scripts under `run --tf1`, unmodified from a copy, on tiny synthetic translation data:
NMT_ID0512 (attention model, static decoder) and GNMT_ID1819 (Estimator, CudnnLSTM encoder and decoder, beam
search inference from the written checkpoint). They run only where NPU_BRIDGE_COMPAT_MODELZOO names a
ModelZoo-TensorFlow checkout (none in CI); test_seq2seq.py's stand-in runs everywhere."""

import math
import os
import random
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.starts_processes

HERE = Path(__file__).parent
MODELZOO = Path(os.environ.get("NPU_BRIDGE_COMPAT_MODELZOO", "/nonexistent"))
NMT = MODELZOO / "TensorFlow/built-in/nlp/NMT_ID0512_for_TensorFlow/nmt/nmt"
GNMT = MODELZOO / "TensorFlow/built-in/nlp/GNMT_ID1819_for_TensorFlow"
ENVIRONMENT = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")]),
    "TF_CPP_MIN_LOG_LEVEL": "2",
}


def write_translation_data(folder: Path, names: dict[str, str], vocabulary: int = 20) -> None:
    """Vocabulary files (<unk>, <s>, </s> first) and parallel sentence files: the target is the reversed source,
    each word mapped to another, so a model can learn it. `names` maps a role (vocab, train, dev, test) to the
    file prefix the script reads."""
    source_words = [f"s{index}" for index in range(vocabulary)]
    target_words = [f"t{index}" for index in range(vocabulary)]
    for suffix, words in (("src", source_words), ("tgt", target_words)):
        (folder / f"{names['vocab']}.{names[suffix]}").write_text("\n".join(["<unk>", "<s>", "</s>", *words]) + "\n")
    for role, count in (("train", 256), ("dev", 16), ("test", 16)):
        if role not in names:
            continue
        generator = random.Random(role)
        pairs = []
        for _ in range(count):
            ids = [generator.randrange(vocabulary) for _ in range(generator.randint(3, 8))]
            pairs.append((ids, [(index * 7 + 3) % vocabulary for index in reversed(ids)]))
        for suffix, words, side in (("src", source_words, 0), ("tgt", target_words, 1)):
            lines = [" ".join(words[index] for index in pair[side]) for pair in pairs]
            (folder / f"{names[role]}.{names[suffix]}").write_text("\n".join(lines) + "\n")


def run_tf1(folder: Path, arguments: list[str], environment: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "npu_bridge_compat", "run", "--tf1", *arguments],
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=folder,
        env={**ENVIRONMENT, **(environment or {})},
    )


@pytest.mark.skipif(not NMT.is_dir(), reason="no ModelZoo-TensorFlow checkout")
def test_modelzoos_nmt_id0512_trains_its_attention_model(tmp_path):
    folder = tmp_path / "nmt"
    shutil.copytree(NMT, folder)
    data = tmp_path / "data"
    data.mkdir()
    write_translation_data(
        data, {"vocab": "vocab", "train": "train", "dev": "tst2012", "test": "tst2013", "src": "vi", "tgt": "en"}
    )
    result = run_tf1(
        folder,
        [
            "nmt.py",
            "--attention=scaled_luong",
            "--src=vi",
            "--tgt=en",
            f"--vocab_prefix={data / 'vocab'}",
            f"--train_prefix={data / 'train'}",
            f"--dev_prefix={data / 'tst2012'}",
            f"--test_prefix={data / 'tst2013'}",
            f"--out_dir={tmp_path / 'out'}",
            "--num_train_steps=12",
            "--steps_per_stats=1",
            "--num_layers=2",
            "--num_units=16",
            "--dropout=0.0",
            "--batch_size=16",
            "--learning_rate=0.5",
            "--metrics=bleu",
        ],
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "NoCounterpartError" not in result.stderr
    perplexities = [float(value) for value in re.findall(r"^  step: \d+ .*? ppl: ([\d.]+)", result.stdout, re.M)]
    assert len(perplexities) == 12 and all(math.isfinite(value) for value in perplexities)
    assert perplexities[-1] < perplexities[0]
    assert (tmp_path / "out" / "translate.ckpt-12.index").is_file()


@pytest.mark.skipif(not GNMT.is_dir(), reason="no ModelZoo-TensorFlow checkout")
def test_modelzoos_gnmt_id1819_trains_with_cudnn_lstm_and_translates_with_beam_search(tmp_path):
    folder = tmp_path / "gnmt"
    shutil.copytree(GNMT, folder)
    data = tmp_path / "data"
    data.mkdir()
    write_translation_data(
        data,
        {
            "vocab": "vocab.bpe.32000",
            "train": "train.tok.clean.bpe.32000",
            "test": "newstest2014.tok.bpe.32000",
            "src": "en",
            "tgt": "de",
        },
    )
    # the script scores translations with Moses' detokenizer and sacrebleu (which downloads WMT14's test set):
    # an identity detokenizer and a scorer that reports 0 stand in for them
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "detokenizer.perl").write_text("while (<STDIN>) { print; }\n")
    (tools / "sacrebleu").write_text("#!/bin/sh\ncat > /dev/null\necho 0.0\n")
    (tools / "sacrebleu").chmod(0o755)
    model = [
        f"--data_dir={data}",
        f"--output_dir={tmp_path / 'out'}",
        "--batch_size=16",
        "--num_units=16",
        "--num_layers=4",
        "--use_DynamicRNN=False",
        "--use_fused_lstm=False",
        "--use_fused_lstm_dec=False",
        "--use_cudnn_lstm=True",
    ]
    environment = {"RANK_SIZE": "1", "RANK_ID": "0", "DEVICE_ID": "0"}
    trained = run_tf1(
        folder,
        ["nmt.py", "--mode=train", "--debug_num_train_steps=30", "--max_train_epochs=1", "--learning_rate=0.01",
         "--warmup_steps=0", *model],
        environment,
    )  # fmt: skip
    assert trained.returncode == 0, trained.stderr[-3000:]
    losses = [float(value) for value in re.findall(r"loss = ([\d.]+), step = \d+", trained.stderr)]
    assert len(losses) == 3 and all(math.isfinite(value) for value in losses)
    assert losses[-1] < losses[0]
    assert (tmp_path / "out" / "model.ckpt-30.index").is_file()
    translated = run_tf1(
        folder,
        ["nmt.py", "--mode=infer", f"--ckpt={tmp_path / 'out' / 'model.ckpt-30'}", "--beam_width=3",
         "--infer_batch_size=4", f"--detokenizer_file={tools / 'detokenizer.perl'}", *model],
        {**environment, "PATH": f"{tools}{os.pathsep}{os.environ['PATH']}"},
    )  # fmt: skip
    assert translated.returncode == 0, translated.stderr[-3000:]
    assert "Restoring parameters from" in translated.stderr
    lines = (tmp_path / "out" / "newstest2014_out_30.tok.de").read_text().splitlines()
    assert len(lines) == 16
