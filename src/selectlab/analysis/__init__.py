"""The papers' analyses of the annotated corpus: score distributions per source, correlation
heatmaps, ratings against reference-LM likelihood, and DataMan's corpus statistics."""
