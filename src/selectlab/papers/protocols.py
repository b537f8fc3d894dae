"""Each paper's evaluation protocol, read from `evaluation.protocols` in the config.

A protocol lists the paper's tasks with their shot counts and reported metric, the groups its
tables show and how its average is taken (`tasks`: the mean of every grouped task, as QuRating,
DataMan and Meta-rater report it; `groups`: the mean of the group means). DataMan's protocol also
names the MMLU subtasks of each continued-pre-training domain (its Table 2). A protocol's
`tables` say which variants are the rows of each numbered table.

What a model is actually evaluated on is a *setting*, a (task, shots) pair. Several papers may
need the same setting (QuRating and DataMan share nine of their ten); a setting is evaluated once
per model. Offline (`evaluation.icl.tasks: local`) the papers' benchmarks are not available:
`evaluation.icl.stand_ins` maps each paper task to a local task built from held-out text and may
fix one shot count for all of them; tables say so wherever such numbers appear.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from selectlab.papers.layouts import TableLayout, layout

METRICS = ("acc", "acc_norm", "exact_match")
AVERAGES = ("tasks", "groups")
# DataMan's domain letter of a continued-pre-training selection, as its `where` filter names it.
DOMAIN_SCORE = "dataman.domain"


@dataclass(frozen=True)
class TaskSpec:
    name: str
    label: str
    shots: int
    metric: str


@dataclass(frozen=True)
class Group:
    id: str
    label: str
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class Domain:
    key: str
    label: str
    tasks: tuple[str, ...]


@dataclass(frozen=True)
class Protocol:
    name: str
    paper: str
    average: str
    groups: tuple[Group, ...]
    tasks: dict[str, TaskSpec]
    domains: dict[str, Domain] = field(default_factory=dict)
    tables: dict[str, dict] = field(default_factory=dict)

    @property
    def grouped_tasks(self) -> list[str]:
        return [task for group in self.groups for task in group.tasks]

    @property
    def extra_tasks(self) -> list[str]:
        """Tasks outside every group and every domain block (e.g. Meta-rater's MMLU and NQ)."""
        used = set(self.grouped_tasks) | {t for d in self.domains.values() for t in d.tasks}
        return [name for name in self.tasks if name not in used]


@dataclass(frozen=True)
class Setting:
    """One (task, shots) evaluation of a model: the unit lm-eval results are cached by."""

    task: str
    shots: int

    @property
    def key(self) -> str:
        return f"{self.task}@{self.shots}"


def parse_protocol(name: str, spec: dict) -> Protocol:
    tasks = {
        task: TaskSpec(task, str(entry.get("label", task)), int(entry["shots"]),
                       str(entry["metric"]))
        for task, entry in spec["tasks"].items()
    }
    for task in tasks.values():
        if task.metric not in METRICS:
            raise ValueError(f"protocol {name!r}: task {task.name!r} reports {task.metric!r}; "
                             f"known metrics: {METRICS}")
    groups = tuple(Group(g["id"], str(g.get("label", g["id"])), tuple(g["tasks"]))
                   for g in spec["groups"])
    domains = {str(key): Domain(str(key), str(d.get("label", key)), tuple(d["tasks"]))
               for key, d in spec.get("domains", {}).items()}
    named = [t for g in groups for t in g.tasks] + [t for d in domains.values() for t in d.tasks]
    unknown = sorted(set(named) - set(tasks))
    if unknown:
        raise ValueError(f"protocol {name!r}: groups or domains name tasks without an entry "
                         f"under `tasks`: {unknown}")
    if spec.get("average", "tasks") not in AVERAGES:
        raise ValueError(f"protocol {name!r}: average must be one of {AVERAGES}")
    return Protocol(name, str(spec.get("paper", name)), spec.get("average", "tasks"), groups,
                    tasks, domains, dict(spec.get("tables", {})))


def protocols(config: dict) -> dict[str, Protocol]:
    """The configured protocols by name (empty when the config names none)."""
    specs = config["evaluation"].get("protocols", {})
    return {name: parse_protocol(name, spec) for name, spec in specs.items()}


# ---- rows of each table -----------------------------------------------------------------


def table_rows(config: dict, table_spec: dict) -> list[str]:
    """Variants named in `variants` (in that order), then members of `families` (config order)."""
    variants = config["variants"]
    explicit = list(table_spec.get("variants", []))
    unknown = [name for name in explicit if name not in variants]
    if unknown:
        raise ValueError(f"table rows name unknown variants: {unknown}")
    families = set(table_spec.get("families", []))
    by_family = [name for name, v in variants.items() if v["family"] in families]
    return list(dict.fromkeys(explicit + by_family))


@dataclass(frozen=True)
class PaperTable:
    protocol: Protocol
    layout: TableLayout
    rows: tuple[str, ...]
    table_id: str = ""  # the config's key: table1, figure1, ...

    @property
    def spec(self) -> dict:
        return self.protocol.tables[self.table_id]

    @property
    def name(self) -> str:
        return self.layout.name


def paper_tables(config: dict) -> list[PaperTable]:
    """Every configured numbered table that has at least one row, in protocol order; your own
    rows (selectlab.plugins) join the tables whose layout has `open_rows`."""
    from selectlab.plugins.rows import users_variants

    tables, yours = [], users_variants(config)
    for protocol in protocols(config).values():
        for table_id, spec in protocol.tables.items():
            if "rater" in spec:  # rows are rater trainings (selectlab.papers.rater_comparison)
                continue
            rows = table_rows(config, spec)
            shape = layout(protocol.name, table_id)
            if rows and shape.open_rows:
                rows = list(dict.fromkeys(rows + yours))
            if rows:
                tables.append(PaperTable(protocol, shape, tuple(rows), table_id))
    return tables


def variant_domains(config: dict, variant: str) -> list[str]:
    """The DataMan domain letters a variant's selection is restricted to ([] if none)."""
    where = config["variants"][variant].get("params", {}).get("where", {})
    return [str(letter) for letter in where.get(DOMAIN_SCORE, [])]


@dataclass(frozen=True)
class DomainBlock:
    domain: Domain
    rows: tuple[str, ...]  # the model continued from, then each continued model


def domain_blocks(config: dict, table: PaperTable) -> list[DomainBlock]:
    """DataMan Table 2's blocks: per domain, the base model and the models continued on it."""
    blocks: dict[str, list[str]] = {}
    for variant in table.rows:
        letters = [d for d in variant_domains(config, variant) if d in table.protocol.domains]
        base = config["variants"][variant].get("pretrain", {}).get("init_from")
        if len(letters) != 1 or base is None:
            raise ValueError(
                f"{table.name}: row {variant!r} must continue pre-training another variant "
                f"(pretrain.init_from) on exactly one domain of the protocol "
                f"({sorted(table.protocol.domains)}) named by `where: {{{DOMAIN_SCORE}: ...}}`")
        rows = blocks.setdefault(letters[0], [base])
        if rows[0] != base:
            raise ValueError(f"{table.name}: domain {letters[0]} has rows continued from both "
                             f"{rows[0]!r} and {base!r}")
        rows.append(variant)
    return [DomainBlock(table.protocol.domains[key], tuple(rows))
            for key, rows in sorted(blocks.items(), key=lambda kv: list(
                table.protocol.domains).index(kv[0]))]


def fraction_key(fraction: float) -> str:
    """How a point of a training curve is named in cells, claims and paths: "0.5", "1.0"."""
    return str(float(fraction))


def curve_fractions(config: dict, variant: str,
                    tables: list[PaperTable] | None = None) -> list[float]:
    """The points (fractions of its tokens, below 1) at which a variant's training is
    snapshotted for the curve figures; [] for a variant on no curve. `tables`: paper_tables,
    when a caller asks for every variant (resolved once, not once per variant)."""
    fractions = {float(f) for table in (paper_tables(config) if tables is None else tables)
                 if table.layout.kind == "curve" and variant in table.rows
                 for f in table.spec.get("fractions", [])}
    return sorted(fractions)


def table_tasks(config: dict, table: PaperTable, variant: str) -> list[str]:
    """The protocol tasks a table shows for one of its rows."""
    kind = table.layout.kind
    if kind == "ppl_source":
        return []
    if kind == "domain":
        return [t for block in domain_blocks(config, table) if variant in block.rows
                for t in block.domain.tasks]
    if table.layout.extra_tasks:
        return table.protocol.extra_tasks
    return table.protocol.grouped_tasks


def table_members(config: dict, table: PaperTable) -> list[str]:
    """Every variant a table reads results of (for the domain table, the bases too)."""
    if table.layout.kind == "domain":
        return list(dict.fromkeys(v for block in domain_blocks(config, table)
                                  for v in block.rows))
    return list(table.rows)


# ---- what each model is evaluated on ----------------------------------------------------


@dataclass(frozen=True)
class StandIns:
    """Offline stand-ins for the papers' benchmarks (`evaluation.icl.stand_ins`)."""

    tasks: dict[str, str]
    shots: int | None  # None = each protocol's own shot count

    def setting(self, spec: TaskSpec, local: bool) -> Setting:
        if not local:
            return Setting(spec.name, spec.shots)
        if spec.name not in self.tasks:
            raise ValueError(f"ICL tasks are local but paper task {spec.name!r} has no stand-in "
                             "under evaluation.icl.stand_ins.tasks")
        return Setting(self.tasks[spec.name], spec.shots if self.shots is None else self.shots)


def uses_local_tasks(config: dict) -> bool:
    return config["evaluation"]["icl"]["tasks"] == "local"


def stand_ins(config: dict) -> StandIns:
    spec = config["evaluation"]["icl"].get("stand_ins", {})
    shots = spec.get("shots", "paper")
    return StandIns(dict(spec.get("tasks", {})), None if shots == "paper" else int(shots))


def task_setting(config: dict, spec: TaskSpec) -> Setting:
    """The setting a paper task is evaluated with in this configuration."""
    return stand_ins(config).setting(spec, uses_local_tasks(config))


def variant_settings(config: dict, variant: str,
                     tables: list[PaperTable] | None = None) -> list[Setting]:
    """The protocol settings a (base) variant needs: those of every table it appears in
    (`tables` as for curve_fractions)."""
    settings: dict[str, Setting] = {}
    for table in paper_tables(config) if tables is None else tables:
        if variant not in table_members(config, table):
            continue
        for task in table_tasks(config, table, variant):
            setting = task_setting(config, table.protocol.tasks[task])
            settings.setdefault(setting.key, setting)
    return sorted(settings.values(), key=lambda s: (s.task, s.shots))


def curve_settings(config: dict, variant: str) -> list[Setting]:
    """The settings a variant's training snapshots are evaluated on (its curve figures)."""
    settings = {task_setting(config, table.protocol.tasks[t]).key:
                task_setting(config, table.protocol.tasks[t])
                for table in paper_tables(config)
                if table.layout.kind == "curve" and variant in table.rows
                for t in table.protocol.grouped_tasks}
    return sorted(settings.values(), key=lambda s: (s.task, s.shots))


def largest_stand_in_shots(config: dict) -> int:
    """The most demonstrations any stand-in task is asked for (sizes their few-shot split)."""
    if not uses_local_tasks(config):
        return 0
    shots = [task_setting(config, spec).shots
             for table in paper_tables(config)
             for variant in table_members(config, table)
             for spec in (table.protocol.tasks[t] for t in table_tasks(config, table, variant))]
    return max(shots, default=0)
