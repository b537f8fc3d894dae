# Meta-rater: each search's proxies are ordinary variants (select, pack, pretrain and
# eval_perplexity run them, in parallel and resumable); this rule fits the loss regressor on the
# first N of them and writes the learned weights that `metarater` variants select with.
SEARCHES = list(cfg.metarater_searches(config))


if SEARCHES:

    rule fit_metarater:
        input:
            manifests=proxy_files("manifest"),
            perplexity=proxy_files("perplexity"),
        output:
            f"{RUN}/metarater/{{search}}/n{{proxies}}/weights.json",
        log:
            f"{LOGS}/fit_metarater/{{search}}_n{{proxies}}.log",
        wildcard_constraints:
            search="|".join(SEARCHES),
            proxies="[0-9]+",
        container:
            CONTAINERS["cpu"]
        resources:
            mem_mb=4000,
            runtime=60,
        params:
            cfg=lambda w: json_param(
                cfg.resolve_metarater_fit(config, w.search, int(w.proxies))
            ),
        shell:
            "selectlab select metarater-fit --params {params.cfg:q}"
            " --manifests {input.manifests} --perplexity {input.perplexity}"
            " --out {output} > {log} 2>&1"
