# Apptainer images, one per environment file in envs/: `snakemake containers` builds those that
# are missing or older than their definition, environment file or selectlab's source. It needs
# apptainer and network access, runs on the submitting machine, and is not part of `all`.
import glob

CONTAINER_ENVS = ["cpu", "train", "vllm"]


rule containers:
    input:
        expand("containers/{env}.sif", env=CONTAINER_ENVS),


rule build_container:
    # `run` keeps the build on the host even under --software-deployment-method apptainer.
    input:
        definition="containers/{env}.def",
        environment="envs/{env}.yaml",
        source=[
            "pyproject.toml",
            *sorted(glob.glob("src/selectlab/**/*.py", recursive=True)),
        ],
    output:
        "containers/{env}.sif",
    log:
        layout.container_build_log(),
    wildcard_constraints:
        env="|".join(CONTAINER_ENVS),
    localrule: True
    params:
        # Unprivileged users build through a fake root; root builds as itself.
        fakeroot="" if os.geteuid() == 0 else "--fakeroot",
    run:
        shell(
            "apptainer build --force {params.fakeroot} {output} {input.definition} > {log} 2>&1"
        )
