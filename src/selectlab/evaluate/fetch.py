"""Download the lm-eval benchmarks once, where the internet is reachable, for offline jobs.

Compute nodes often have no internet. The `fetch_eval_data` rule runs this on the submit host
(a Snakemake local rule): every configured lm-eval task is loaded once with the Hugging Face
caches pointed at a shared directory (`evaluation.icl.data_cache`), which the ICL jobs then
read with HF_DATASETS_OFFLINE and HF_HUB_OFFLINE set (`offline_environment`). The models'
tokenizers need nothing: each trained model is saved with its tokenizer.

Where the Hub cannot be reached (a quick TCP probe, so a missing network fails in seconds rather
than after minutes of retries) the tasks are loaded from the cache alone; a task that is not
there is an error naming the tasks, the cache and what to do. The offline local tasks
(`tasks: local`) are built from held-out text and need nothing: the rule only records that.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from urllib.parse import urlparse

DEFAULT_ENDPOINT = "https://huggingface.co"
PROBE_TIMEOUT_S = 5.0


def offline_environment(cache_dir: str | Path) -> dict[str, str]:
    """Environment that makes datasets, the Hub client and lm-eval read only `cache_dir`."""
    cache = Path(cache_dir).resolve()
    return {"HF_HOME": str(cache), "HF_DATASETS_CACHE": str(cache / "datasets"),
            "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


def hub_reachable(endpoint: str | None = None, timeout: float = PROBE_TIMEOUT_S) -> bool:
    url = urlparse(endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


def task_names(tasks) -> list[str]:
    return [] if tasks == "local" else [task["name"] for task in tasks]


def fetch_eval_data(tasks, cache_dir: str | Path, online: bool | None = None) -> dict:
    """Load every task of `tasks` into `cache_dir` (a no-op for `"local"`); returns a record.

    Must run in a fresh process: the environment is set before datasets is imported."""
    names = task_names(tasks)
    cache = Path(cache_dir).resolve()
    if not names:
        return {"tasks": [], "cache": str(cache),
                "note": "local tasks are built from held-out text; nothing to download"}
    online = hub_reachable() if online is None else online
    environment = offline_environment(cache)
    if online:
        environment = {k: v for k, v in environment.items() if not k.endswith("OFFLINE")}
    os.environ.update(environment)
    cache.mkdir(parents=True, exist_ok=True)
    from lm_eval.tasks import TaskManager

    manager, missing = TaskManager(), {}
    for name in names:
        try:
            manager.load([name])
        except Exception as error:  # noqa: BLE001 - every failure is reported, by task
            missing[name] = f"{type(error).__name__}: {error}"
    if missing:
        where = "could not be downloaded" if online else (
            "are not in the cache, and the Hugging Face Hub cannot be reached from here")
        details = "; ".join(f"{name} ({reason[:200]})" for name, reason in missing.items())
        raise ValueError(f"lm-eval tasks {sorted(missing)} {where} (cache: {cache}). Run "
                         "`snakemake fetch_eval_data` on a machine with internet access that "
                         f"sees this directory, then run the workflow again. {details}")
    return {"tasks": names, "cache": str(cache)}
