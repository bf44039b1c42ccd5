#!/usr/bin/env bash
# Install the Debian TeX packages that compile the workflow's LaTeX tables (pdflatex with booktabs,
# longtable, geometry, caption and graphicx): texlive-latex-base and texlive-latex-recommended, no recommends
# (about 27 s from a warm mirror on the build machine), and poppler-utils (pdftotext: the tests check that
# every compiled table's text stays inside its page). Idempotent: exits 0 at once when pdflatex
# and every package the tables use are already there. tests/test_tables.py and test_compare.py
# compile every table when pdflatex is on PATH and skip, saying why, when it is not.
set -euo pipefail

have_all() {
    command -v pdflatex >/dev/null 2>&1 || return 1
    command -v kpsewhich >/dev/null 2>&1 || return 1
    command -v pdftotext >/dev/null 2>&1 || return 1
    for sty in booktabs.sty longtable.sty geometry.sty caption.sty graphicx.sty; do
        [ -n "$(kpsewhich "$sty")" ] || return 1
    done
}

if have_all; then
    echo "install-latex: already installed ($(pdflatex --version | head -n 1))"
    exit 0
fi
echo "install-latex: installing texlive-latex-base texlive-latex-recommended poppler-utils"

sudo=""
if [ "$(id -u)" -ne 0 ]; then
    sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
packages=(texlive-latex-base texlive-latex-recommended poppler-utils)
# Refresh the package lists only when apt does not know the packages yet (a fresh container).
if ! apt-cache show "${packages[@]}" >/dev/null 2>&1; then
    $sudo apt-get -o DPkg::Lock::Timeout=600 update
fi
$sudo apt-get -o DPkg::Lock::Timeout=600 install -y --no-install-recommends "${packages[@]}"
have_all || { echo "install-latex: pdflatex or a needed .sty is still missing" >&2; exit 1; }
echo "install-latex: installed ($(pdflatex --version | head -n 1))"
