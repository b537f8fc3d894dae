"""Container definitions and environment files: parsed, cross-checked, one source of versions.

containers/<env>.def builds the image of envs/<env>.yaml; the pins there must agree with
envs/constraints-cpu.txt (the local and CI environment) wherever both name a package.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import yaml
from spython.main.parse.parsers import SingularityParser
from spython.main.parse.writers import DockerWriter

from selectlab.report.plan import ENVIRONMENTS

REPO = Path(__file__).resolve().parents[2]
ENVS = sorted(p.stem for p in (REPO / "envs").glob("*.yaml"))
# Pins vLLM's own requirements force away from the CPU pins (see envs/vllm.yaml).
ALLOWED_DRIFT = {"vllm": {"transformers", "numpy"}}
DOCKER_INSTRUCTIONS = {"FROM", "ADD", "COPY", "RUN", "ENV", "LABEL", "CMD", "ENTRYPOINT",
                       "WORKDIR", "USER", "ARG", "EXPOSE", "VOLUME", "SHELL", "HEALTHCHECK"}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins_of(lines) -> dict[str, str]:
    pins = {}
    for line in lines:
        line = line.strip()
        if line and not line.startswith(("#", "-")):
            name, version = line.split("==")
            assert canonical(name) not in pins, f"{name} pinned twice"
            pins[canonical(name)] = version
    return pins


def environment(env: str) -> dict:
    return yaml.safe_load((REPO / "envs" / f"{env}.yaml").read_text())


def pip_section(env: str) -> list[str]:
    deps = environment(env)["dependencies"]
    return next(d["pip"] for d in deps if isinstance(d, dict))


def recipe(env: str):
    return SingularityParser(str(REPO / "containers" / f"{env}.def")).recipe["spython-base"]


def post_commands(env: str) -> list[str]:
    """%post as shell commands: continuation lines joined, comments dropped."""
    text = "\n".join(recipe(env).install).replace("\\\n", " ")
    return [line.strip() for line in text.splitlines() if line.strip()
            and not line.strip().startswith("#")]


def test_every_environment_file_has_a_definition_and_the_other_way_round():
    assert ENVS == ["cpu", "train", "vllm"]
    assert sorted(p.stem for p in (REPO / "containers").glob("*.def")) == ENVS


def test_every_container_a_rule_names_has_a_definition():
    rules = "\n".join(p.read_text() for p in (REPO / "rules").glob("*.smk"))
    named = set(re.findall(r"""CONTAINERS\[["'](\w+)["']\]""", rules))
    assert named and named <= set(ENVS)
    # The default image of each environment is the .sif its definition builds.
    defaults = dict(re.findall(r'"(\w+)": "containers/(\w+)\.sif"', rules))
    assert defaults == {env: env for env in ENVS}
    # The environments whose packages the provenance records (selectlab.report.plan).
    assert set(ENVIRONMENTS) <= set(ENVS)
    built = re.search(r"CONTAINER_ENVS = (\[.*\])", (REPO / "rules/containers.smk").read_text())
    assert yaml.safe_load(built.group(1)) == ENVS


@pytest.mark.parametrize("env", ["cpu", "train", "vllm"])
def test_definition_builds_its_environment_file_and_nothing_else(env):
    image = recipe(env)
    # A versioned base image, never a moving tag.
    assert re.fullmatch(r"[\w./-]+:\d+\.\d+\.\d+-[\w.-]+", image.fromHeader)
    files = dict(line.split() for line in image.files)
    assert files == {f"envs/{env}.yaml": f"/opt/selectlab/envs/{env}.yaml",
                     "pyproject.toml": "/opt/selectlab/pyproject.toml",
                     "src": "/opt/selectlab/src"}
    post = post_commands(env)
    creates = [c for c in post if c.startswith("micromamba create")]
    assert creates == [f"micromamba create -y -r /opt/conda -p /opt/env "
                       f"-f /opt/selectlab/envs/{env}.yaml"]
    # selectlab itself adds no packages: every version comes from the environment file.
    installs = [c for c in post if "pip install" in c or "micromamba install" in c]
    assert installs == ["/opt/env/bin/python -m pip install --no-deps --no-build-isolation "
                        "/opt/selectlab"]
    assert image.environ == ["PATH=/opt/env/bin:$PATH"]
    # %test: the built image must at least start selectlab.
    assert image.test == "/bin/bash /tests.sh"
    assert 'echo "selectlab --help" >> /tests.sh' in image.install


def test_cpu_image_carries_the_debian_packages_the_embedded_corpus_reads():
    bootstrap = (REPO / "scripts" / "bootstrap.sh").read_text()
    wanted = re.search(r"APT_PACKAGES=\(([^)]*)\)", bootstrap).group(1).split()
    post = post_commands("cpu")
    apt = [c for c in post if "apt-get install" in c]
    git, corpus = apt
    assert corpus.split("--no-install-recommends")[1].split() == wanted
    # Slim images drop /usr/share/doc and /usr/share/man unless the exclusion goes first...
    lifted = post.index("rm -f /etc/dpkg/dpkg.cfg.d/docker")
    assert lifted < post.index(corpus)
    # ...and git (for provenance) goes in before that, so its files stay out of the corpus.
    assert "git" in git.split() and post.index(git) < lifted


def test_train_image_carries_nccls_infiniband_libraries():
    apt = [c for c in post_commands("train") if "apt-get install" in c]
    assert len(apt) == 1
    assert {"libibverbs1", "ibverbs-providers", "librdmacm1"} <= set(apt[0].split())


@pytest.mark.parametrize("env", ["cpu", "train", "vllm"])
def test_environment_file_pins_every_package_exactly(env):
    spec = environment(env)
    assert spec["name"] == f"selectlab-{env}" and spec["channels"] == ["conda-forge"]
    conda = [d for d in spec["dependencies"] if isinstance(d, str)]
    # The containers' Python is the minor version the local environment and CI run.
    assert conda == [f"python={sys.version_info.major}.{sys.version_info.minor}", "pip"]
    entries = pip_section(env)
    assert all(re.fullmatch(r"[A-Za-z0-9][\w.-]*==[\w.+!-]+", e) for e in entries), entries
    pins = pins_of(entries)
    pyproject = (REPO / "pyproject.toml").read_text()
    core = re.search(r"^dependencies = \[(.*?)\]", pyproject, re.S | re.M).group(1)
    needed = {canonical(n) for n in re.findall(r'"([A-Za-z0-9_.-]+)', core)} | {"setuptools"}
    needed |= {"cpu": {"tokenizers", "transformers", "lightgbm", "matplotlib", "scikit-learn"},
               "train": {"torch", "transformers", "lm-eval", "accelerate", "datasets", "peft"},
               "vllm": {"vllm", "torch", "transformers"}}[env]
    assert needed <= set(pins), needed - set(pins)


@pytest.mark.parametrize("env", ["cpu", "train", "vllm"])
def test_environment_pins_agree_with_the_cpu_constraints(env):
    constraints = pins_of((REPO / "envs" / "constraints-cpu.txt").read_text().splitlines())
    pins = pins_of(pip_section(env))
    drift = {name for name in set(pins) & set(constraints)
             # local builds carry a suffix (2.13.0+cpu); the release is what must agree
             if pins[name].split("+")[0] != constraints[name].split("+")[0]}
    assert drift == ALLOWED_DRIFT.get(env, set()), {n: (pins[n], constraints[n]) for n in drift}
    if env != "cpu":
        assert pins["torch"] == constraints["torch"].split("+")[0]


@pytest.mark.parametrize("env", ["cpu", "train", "vllm"])
def test_converted_dockerfile_is_well_formed(env):
    dockerfile = DockerWriter(SingularityParser(
        str(REPO / "containers" / f"{env}.def")).recipe).convert()
    logical = dockerfile.replace("\\\n", " ").splitlines()
    instructions = [line.split()[0] for line in logical if line.strip()]
    assert set(instructions) <= DOCKER_INSTRUCTIONS, set(instructions) - DOCKER_INSTRUCTIONS
    assert logical[0] == f"FROM {recipe(env).fromHeader} AS spython-base"
    adds = [line.split()[1:] for line in logical if line.startswith("ADD ")]
    assert all((REPO / source).exists() for source, _ in adds)
    envs = [line for line in logical if line.startswith("ENV ")]
    assert all(re.fullmatch(r"\w+=\S+", pair) for line in envs for pair in line.split()[1:])
    runs = "\n".join(line for line in logical if line.startswith("RUN "))
    assert f"-f /opt/selectlab/envs/{env}.yaml" in runs
    # spython turns %test into a script plus a HEALTHCHECK line: the script runs selectlab.
    assert 'echo "selectlab --help" >> /tests.sh' in runs
