"""report_to: the trainer's scalars reach TensorBoard and Weights & Biases (offline mode) identically.

The trainer runs for real (a tiny Qwen2 from a config, a plain-Python reward, so no service is needed);
its W&B run is written offline to a temporary WANDB_DIR and read back from the run's ``.wandb`` file:
that file is a LevelDB-style log of W&B's own ``Record`` protobufs (wandb.proto.wandb_internal_pb2),
framed in 32 KiB blocks of [crc32 | length | type] chunks. TensorBoard's events are read with
TensorBoard's own EventAccumulator. Both must hold exactly the finite scalars of metrics.jsonl.
Trackio is optional: asked for and missing, it is a clear error before any training.
"""

from __future__ import annotations

import importlib.util
import json
import math
import struct
import sys
from pathlib import Path

import pytest
import torch

from tests.trainer.test_rollout import tiny_model, tiny_tokenizer
from trainer.config import GRPOConfig, load_config
from trainer.errors import ConfigError
from trainer.grpo.rewards import PythonReward
from trainer.run.metrics import MetricsLogger, ReportToError, read_metrics
from trainer.train import train

torch.set_num_threads(1)

WANDB_FILE_HEADER = 7  # ":W&B" + 2-byte magic + 1-byte version
BLOCK = 32768
CHUNK_HEADER = 7  # crc32 (4) + length (2, little-endian) + type (1): 1 full, 2 first, 3 middle, 4 last


def wandb_records(path: Path) -> list[bytes]:
    data = path.read_bytes()
    assert data[:4] == b":W&B", "not a .wandb file"
    out, pending, pos = [], b"", WANDB_FILE_HEADER
    while pos + CHUNK_HEADER <= len(data):
        if BLOCK - pos % BLOCK < CHUNK_HEADER:  # block trailer: padding
            pos += BLOCK - pos % BLOCK
            continue
        length, kind = struct.unpack("<HB", data[pos + 4 : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += CHUNK_HEADER + length
        if kind == 0 and length == 0:
            break
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            out.append(pending)
            pending = b""
    return out


def wandb_history(run_dir: Path) -> tuple[dict[int, dict[str, float]], dict]:
    """{step: {key: value}} of the user's scalars, and the run's config, from an offline run folder."""
    from wandb.proto import wandb_internal_pb2 as wpb

    (run_file,) = run_dir.glob("run-*.wandb")
    history: dict[int, dict[str, float]] = {}
    config: dict = {}
    for raw in wandb_records(run_file):
        rec = wpb.Record()
        rec.ParseFromString(raw)
        if rec.HasField("history"):
            row = history.setdefault(rec.history.step.num, {})
            for item in rec.history.item:
                key = item.key or "/".join(item.nested_key)  # nested: a logged object (the completions table)
                if not key.startswith("_"):
                    row[key] = json.loads(item.value_json)
        elif rec.HasField("run"):
            config.update({item.key: json.loads(item.value_json) for item in rec.run.config.update})
    return history, config


def tensorboard_scalars(tb_dir: Path) -> dict[int, dict[str, float]]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(tb_dir), size_guidance={"scalars": 0})
    acc.Reload()
    out: dict[int, dict[str, float]] = {}
    for tag in acc.Tags()["scalars"]:
        for ev in acc.Scalars(tag):
            out.setdefault(ev.step, {})[tag] = ev.value
    return out


def write_data(path: Path, n: int = 16) -> Path:
    with path.open("w") as f:
        for i in range(n):
            f.write(json.dumps({"prompt": f"{i}+{i + 1}=", "answer": str(2 * i + 1)}) + "\n")
    return path


def tags_reward(completion: str, answer: str) -> float:
    return 0.5 * ("<think>" in completion) + 0.5 * (answer in completion)


def test_wandb_offline_run_holds_the_trainers_scalars(tmp_path, monkeypatch):
    pytest.importorskip("wandb", reason="wandb is a dev extra (`pip install -e .[dev]`)")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb-dir"))
    monkeypatch.setenv("WANDB_SILENT", "true")
    (tmp_path / "wandb-dir").mkdir()
    tok = tiny_tokenizer()
    cfg = GRPOConfig(
        data=str(write_data(tmp_path / "d.jsonl")),
        group_size=4,
        prompts_per_step=2,
        max_new_tokens=8,
        lr=1e-3,
        steps=3,
        run_dir=str(tmp_path / "run"),
        threads=1,
        log_completions_every=1,
        report_to="tensorboard,wandb",
    )
    train(cfg, tiny_model(tok), tok, reward_fn=PythonReward(tags_reward))

    jsonl = {
        r["step"]: {k: v for k, v in r.items() if k != "step" and v is not None and math.isfinite(v)}
        for r in read_metrics(tmp_path / "run" / "metrics.jsonl")
    }
    assert sorted(jsonl) == [1, 2, 3] and "reward/mean" in jsonl[1] and "loss/kl" in jsonl[1]
    (run_dir,) = (tmp_path / "wandb-dir" / "wandb").glob("offline-run-*")
    history, config = wandb_history(run_dir)
    tb = tensorboard_scalars(tmp_path / "run" / "tb")
    for step, want in jsonl.items():
        assert history[step].pop("completions/_type") == "table-file"  # the sampled completions, as a W&B Table
        history[step] = {k: v for k, v in history[step].items() if not k.startswith("completions/")}
        assert history[step] == pytest.approx(want, rel=1e-9), step  # JSON doubles: exact
        assert tb[step] == pytest.approx(want, rel=1e-6), step  # TensorBoard stores float32
    assert set(history) == set(jsonl) and set(tb) == set(jsonl)
    assert config["group_size"] == 4 and config["report_to"] == ["tensorboard", "wandb"]


def test_missing_optional_backends_are_clear_errors(tmp_path, monkeypatch):
    if importlib.util.find_spec("trackio") is None:
        with pytest.raises(ReportToError, match=r"trackio needs the 'trackio' package.*pip install"):
            MetricsLogger(tmp_path / "a", report_to=["tensorboard", "trackio"])
    monkeypatch.setitem(sys.modules, "wandb", None)  # import wandb now raises ImportError, as when not installed
    with pytest.raises(ReportToError, match=r"wandb needs the 'wandb' package.*pip install"):
        MetricsLogger(tmp_path / "b", report_to=["wandb"])
    with pytest.raises(ReportToError, match="unknown backend"):
        MetricsLogger(tmp_path / "c", report_to=["mlflow"])


def test_report_to_in_the_config():
    assert GRPOConfig().report_to == ["tensorboard"]
    assert load_config(overrides=["--report_to", "wandb"]).report_to == ["wandb"]
    assert load_config(overrides=["--report_to", "tensorboard,trackio"]).report_to == ["tensorboard", "trackio"]
    assert load_config(overrides=["--report_to", "none"]).report_to == []
    with pytest.raises(ConfigError, match="report_to"):
        load_config(overrides=["--report_to", "mlflow"])


def test_no_backend_still_writes_metrics_jsonl(tmp_path):
    log = MetricsLogger(tmp_path, report_to=[])
    log.log(1, {"reward/mean": 0.5, "loss/kl": float("nan")})
    log.close()
    assert read_metrics(tmp_path / "metrics.jsonl")[0]["reward/mean"] == 0.5 and not (tmp_path / "tb").exists()
