# The LaTeX and CSV tables made by make_tables.py: one rule per table artefact (table_artefact in
# rules/artefacts.smk, declared beside the rules whose summaries they read), all from this one definition.
# Included last, after every rule file has declared its tables.
for table, made in MADE_TABLES.items():
    stem = (
        ARTEFACTS[table].files["document"].removeprefix("results/").removesuffix(".tex")
    )

    rule:
        name:
            f"table_{table}"
        input:
            **made["inputs"],
            summary=made["summary"],
        output:
            **artefact_outputs(table),
        log:
            f"logs/report/{stem}.log",
        benchmark:
            f"results/benchmarks/report/{stem}.tsv"
        localrule: True
        conda:
            "../envs/plot.yaml"
        threads: 1
        resources:
            **RESOURCES["small"],
        params:
            settings=PLAN.settings("table", {"kind": table}),
        script:
            "../workflow/scripts/make_tables.py"
