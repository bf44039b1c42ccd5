# Quick start:  make demo   (set up, run the offline synthetic demo, build the HTML report)
#               make test   (set up, install the test services, lint, run the whole test suite)
# Developing:   make lint   (ruff check, ruff format --check, snakefmt --check)
#               make test-fast (the tests that do not run the workflow; tests/conftest.py marks the others slow)
VENV ?= .venv
PY := $(VENV)/bin/python
CORES ?= 2

.PHONY: setup demo controls mitigation paper-toy test test-fast lint system-deps

$(VENV)/.installed: requirements.lock pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.lock
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

setup: $(VENV)/.installed

demo: setup
	$(VENV)/bin/snakemake --cores $(CORES)
	$(VENV)/bin/snakemake --cores 1 --report results/report.html
	@echo "Open results/report/index.html (headline results, findings, tables, figures, provenance);"
	@echo "results/report.html is Snakemake's report (rule graph, run times)"

# The demo with its counterbalanced control networks, five per arm, and the attribution across them
# (docs/demo.md: what the demo cannot tell you; its run time: docs/benchmarks.md).
controls: setup
	$(VENV)/bin/snakemake --cores $(CORES) --configfile config/config.yaml config/controls.yaml
	$(VENV)/bin/snakemake --cores 1 --configfile config/config.yaml config/controls.yaml --report results/report.html
	@echo "Open results/report/index.html; results/report.html is Snakemake's report (rule graph, run times)"

# The demo with a planted co-occurrence in its finetuning scenes and five mitigation arms beside its plain
# finetuning (config/mitigation.yaml; docs/finetuning.md, "Mitigation methods").
mitigation: setup
	$(VENV)/bin/snakemake --cores $(CORES) --configfile config/config.yaml config/mitigation.yaml
	$(VENV)/bin/snakemake --cores 1 --configfile config/config.yaml config/mitigation.yaml --report results/report.html
	@echo "Open results/report/index.html; results/report.html is Snakemake's report (rule graph, run times)"

# The paper's own config (config/paper.yaml) end to end, offline, on a toy mirror of its datasets and weights
# (workflow/scripts/build_toy_mirror.py; docs/datasets.md). Its overlay changes only scale and location, and
# switches the paper's intervention on.
PAPER_TOY ?= paper-toy
$(PAPER_TOY)/overlay.yaml: config/paper.yaml workflow/scripts/build_toy_mirror.py $(VENV)/.installed
	$(PY) workflow/scripts/build_toy_mirror.py --config config/paper.yaml --mirror $(PAPER_TOY)/mirror --overlay $@

paper-toy: setup $(PAPER_TOY)/overlay.yaml
	@mkdir -p $(PAPER_TOY)/run; start=$$(date +%s); \
	HF_HUB_OFFLINE=1 $(VENV)/bin/snakemake --cores $(CORES) --snakefile $(abspath Snakefile) --directory $(PAPER_TOY)/run \
	  --configfile $(abspath config/paper.yaml) $(abspath $(PAPER_TOY)/overlay.yaml) && \
	HF_HUB_OFFLINE=1 $(VENV)/bin/snakemake --cores 1 --snakefile $(abspath Snakefile) --directory $(PAPER_TOY)/run \
	  --configfile $(abspath config/paper.yaml) $(abspath $(PAPER_TOY)/overlay.yaml) \
	  --report $(abspath $(PAPER_TOY))/run/results/report.html && \
	echo "paper-toy: the paper's DAG and its report ran in $$(( $$(date +%s) - start )) s; open $(PAPER_TOY)/run/results/report/index.html"

# pdflatex (tables compile), a local SLURM cluster (profile test) and headless Chromium (the report's
# browser test) come from Debian's packages; without root they are skipped, and the tests that need them say so.
system-deps:
	@if [ "$$(id -u)" = 0 ]; then bash .ci/install-latex.sh && bash .ci/install-slurm.sh && bash .ci/install-chromium.sh; \
	else echo "not root: skipping LaTeX, SLURM and Chromium installs (their tests will be skipped)"; fi

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/snakefmt --check Snakefile rules

# --durations: the ten slowest test phases (fixture setups included) end every run, so that growth shows.
# TEST_WORKERS pytest-xdist workers, one test module each at a time (tests/conftest.py's work units): the
# workflow runs leave a core idle much of the time (one job running, a SLURM job awaited).
TEST_WORKERS ?= 2
PYTEST = $(PY) -m pytest -n $(TEST_WORKERS) --durations=10
test: setup system-deps lint
	$(PYTEST)

# Leaving out the slow tests makes tests/conftest.py refuse to run Snakemake (an unmarked slow test fails).
test-fast: setup
	$(PYTEST) -m "not slow and not slurm"
