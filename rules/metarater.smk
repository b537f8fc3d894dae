# Meta-rater: each search's proxies are ordinary variants (select, pack, pretrain and
# eval_perplexity run them, in parallel and resumable); this rule fits the loss regressor on the
# first N of them and writes the learned weights that `metarater` variants select with.
SEARCHES = list(select_cfg.metarater_searches(config))
# The manifests and perplexities of the proxies a fit reads.
FIT_INPUTS = lambda w: select_cfg.proxy_inputs(config, RUN, w.search, int(w.proxies))


if SEARCHES:

    rule fit_metarater:
        input:
            manifests=lambda w: FIT_INPUTS(w)["manifests"],
            perplexity=lambda w: FIT_INPUTS(w)["perplexity"],
        output:
            layout.metarater_weights(RUN),
        log:
            layout.job_log(RUN, "fit_metarater", "{search}_n{proxies}"),
        wildcard_constraints:
            search="|".join(SEARCHES),
            proxies="[0-9]+",
        container:
            CONTAINERS["cpu"]
        threads: rule_threads("fit_metarater")
        resources:
            **rule_resources("fit_metarater"),
        params:
            cfg=lambda w: json_param(
                select_cfg.resolve_metarater_fit(config, w.search, int(w.proxies))
            ),
        shell:
            "selectlab select metarater-fit --params {params.cfg:q}"
            " --manifests {input.manifests} --perplexity {input.perplexity}"
            " --out {output} > {log} 2>&1"
