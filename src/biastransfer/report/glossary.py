"""The report's glossary (glossary.html): every term the pages use, in two plain sentences that say what this
tool computes, with a primary source; the one source of truth for the page and for :func:`link_terms`, which
links a term's first occurrence in a page to its entry. Also the take-away blocks that the glossary page
shows and the landing page can: :func:`methods_block` (what was computed, with the run's settings, and
BibTeX) and :func:`reproduce_command` (the rule and the command that rewrite each headline number).

Sources are cited as text with their DOI or arXiv identifier: the report links nothing outside itself.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from biastransfer.paths import path
from biastransfer.report.headline import ADJUSTMENT_WORDS
from biastransfer.report.html import esc

#: Primary sources, by key: (short form shown beside a term, full reference with its identifier).
REFERENCES: dict[str, tuple[str, str]] = {
    "ranjit2023": (
        "Ranjit et al. 2023",
        "Ranjit, J., Ray, B., Wang, T. & Ordonez, V. (2023). Variation of Gender Biases in Visual Recognition "
        "Models Before and After Finetuning. arXiv:2303.07615.",
    ),
    "caliskan2017": (
        "Caliskan et al. 2017",
        "Caliskan, A., Bryson, J. J. & Narayanan, A. (2017). Semantics derived automatically from language "
        "corpora contain human-like biases. Science 356(6334), 183-186. doi:10.1126/science.aal4230.",
    ),
    "steed2021": (
        "Steed & Caliskan 2021",
        "Steed, R. & Caliskan, A. (2021). Image Representations Learned With Unsupervised Pre-Training Contain "
        "Human-like Biases. FAccT 2021, 701-713. doi:10.1145/3442188.3445932 (arXiv:2010.15052).",
    ),
    "cohen1988": (
        "Cohen 1988",
        "Cohen, J. (1988). Statistical Power Analysis for the Behavioral Sciences, 2nd ed. Lawrence Erlbaum. "
        "ISBN 0-8058-0283-5.",
    ),
    "phipson2010": (
        "Phipson & Smyth 2010",
        "Phipson, B. & Smyth, G. K. (2010). Permutation P-values Should Never Be Zero: Calculating Exact "
        "P-values When Permutations Are Randomly Drawn. Statistical Applications in Genetics and Molecular "
        "Biology 9(1), article 39. doi:10.2202/1544-6115.1585.",
    ),
    "holm1979": (
        "Holm 1979",
        "Holm, S. (1979). A Simple Sequentially Rejective Multiple Test Procedure. Scandinavian Journal of "
        "Statistics 6(2), 65-70. JSTOR 4615733.",
    ),
    "bh1995": (
        "Benjamini & Hochberg 1995",
        "Benjamini, Y. & Hochberg, Y. (1995). Controlling the False Discovery Rate: A Practical and Powerful "
        "Approach to Multiple Testing. Journal of the Royal Statistical Society B 57(1), 289-300. "
        "doi:10.1111/j.2517-6161.1995.tb02031.x.",
    ),
    "wasserstein2016": (
        "Wasserstein & Lazar 2016",
        "Wasserstein, R. L. & Lazar, N. A. (2016). The ASA Statement on p-Values: Context, Process, and "
        "Purpose. The American Statistician 70(2), 129-133. doi:10.1080/00031305.2016.1154108.",
    ),
    "kornblith2019": (
        "Kornblith et al. 2019",
        "Kornblith, S., Norouzi, M., Lee, H. & Hinton, G. (2019). Similarity of Neural Network Representations "
        "Revisited. ICML 2019, PMLR 97, 3519-3529. arXiv:1905.00414.",
    ),
    "efron1979": (
        "Efron 1979",
        "Efron, B. (1979). Bootstrap Methods: Another Look at the Jackknife. The Annals of Statistics 7(1), "
        "1-26. doi:10.1214/aos/1176344552.",
    ),
    "efron1987": (
        "Efron 1987",
        "Efron, B. (1987). Better Bootstrap Confidence Intervals. Journal of the American Statistical "
        "Association 82(397), 171-185. doi:10.1080/01621459.1987.10478410.",
    ),
    "spearman1904": (
        "Spearman 1904",
        "Spearman, C. (1904). The Proof and Measurement of Association between Two Things. The American "
        "Journal of Psychology 15(1), 72-101. doi:10.2307/1412159.",
    ),
    "wang2019": (
        "Wang et al. 2019",
        "Wang, T., Zhao, J., Yatskar, M., Chang, K.-W. & Ordonez, V. (2019). Balanced Datasets Are Not Enough: "
        "Estimating and Mitigating Gender Bias in Deep Image Representations. ICCV 2019, 5310-5319 "
        "(arXiv:1811.08489).",
    ),
    "zhao2017": (
        "Zhao et al. 2017",
        "Zhao, J., Wang, T., Yatskar, M., Ordonez, V. & Chang, K.-W. (2017). Men Also Like Shopping: Reducing "
        "Gender Bias Amplification using Corpus-level Constraints. EMNLP 2017, 2979-2989. "
        "doi:10.18653/v1/D17-1323.",
    ),
    "wang2021": (
        "Wang & Russakovsky 2021",
        "Wang, A. & Russakovsky, O. (2021). Directional Bias Amplification. ICML 2021, PMLR 139, 10882-10893 "
        "(arXiv:2102.12594).",
    ),
    "docs": (
        "biastransfer docs",
        "The biastransfer documentation, docs/statistics.md (and docs/demo.md, docs/layers.md, docs/claims.md, "
        "docs/finetuning.md, docs/formats.md) in the software's repository, at the version this run names on "
        "the provenance page.",
    ),
}


@dataclass(frozen=True)
class Term:
    """One glossary entry: its heading, two sentences, its sources (keys of REFERENCES) and the phrases of the
    pages that name it (matched case-insensitively, as whole words)."""

    name: str
    definition: str
    sources: tuple[str, ...]
    phrases: tuple[str, ...]


#: The glossary, by anchor (glossary.html#anchor), in the page's order.
GLOSSARY: dict[str, Term] = {
    "ieat": Term(
        "iEAT (image embedding association test)",
        "Tests, in one network's embeddings, whether the images of target class X are closer than those of "
        "target class Y to the images of attribute A rather than of attribute B. It is the word-embedding "
        "association test (WEAT) applied to image embeddings, and gives an effect size d and a permutation p.",
        ("steed2021", "caliskan2017"),
        ("iEAT", "iEATs"),
    ),
    "association": Term(
        "association s(w, A, B), raw association",
        "s(w, A, B) is the mean cosine similarity of one image's embedding w with the images of A minus its mean "
        "cosine with the images of B. The raw association is the mean of s over X minus its mean over Y, in "
        "cosine units: the numerator of d.",
        ("caliskan2017",),
        ("raw association", "s(w, A, B)", "s(w,A,B)"),
    ),
    "effect-size": Term(
        "effect size d, pooled SD",
        "d is the raw association divided by the pooled SD, the standard deviation of s over all images of X "
        "and Y together (ddof 1). Positive d means X is closer to A, relative to B, than Y is; by Cohen's "
        "convention 0.2, 0.5 and 0.8 are small, medium and large.",
        ("caliskan2017", "cohen1988"),
        ("effect size", "pooled SD", "mean d"),
    ),
    "permutation-p": Term(
        "permutation p",
        "The share of re-partitions of the images of X and Y into two sets of their sizes whose statistic is at "
        "least as extreme as the observed one (ties count as extreme). It is exact over every partition when "
        "there are no more than the configured permutations, else Monte Carlo with the observed partition "
        "counted once, so it is never 0.",
        ("phipson2010",),
        ("permutation p", "permutation test", "p-value", "p-values"),
    ),
    "p-floor": Term(
        "p-value floor",
        "The smallest p a method can give: 1/permutations for a Monte Carlo test, the fewest extreme "
        "partitions over their number when exact, 2/(R+1) for a bootstrap p of R replicates. The pages print "
        "a p below 0.001 as < 0.001 and one at a coarser floor as ≤ floor, never as 0 or as a smaller number "
        "than the method can resolve (the CSVs and results.json keep the exact values).",
        ("phipson2010",),
        ("p-value floor", "floor"),
    ),
    "adjusted-p": Term(
        "adjusted p (Holm, Benjamini-Hochberg)",
        "A p-value corrected for the other tests of its family (one report table): Holm's step-down procedure "
        "bounds the chance of any false rejection, Benjamini-Hochberg the expected share of false rejections. "
        "The configured report.p_adjust chooses the method, and the verdicts compare the adjusted p with alpha.",
        ("holm1979", "bh1995"),
        ("adjusted p", "Holm-adjusted", "Holm", "Benjamini-Hochberg"),
    ),
    "significant": Term(
        "significant, not significant",
        "A verdict: the adjusted p is below the configured alpha (analysis.ieat.alpha) in the tested direction. "
        "Not significant is not evidence of no association: the detectable d says what the test could see.",
        ("wasserstein2016",),
        ("significant", "not significant", "alpha"),
    ),
    "bootstrap": Term(
        "bootstrap interval (95% CI)",
        "An interval from recomputing an estimate on many resamples of the images drawn with replacement (the "
        "configured replicates). The iEAT's d gets a bias-corrected and accelerated (BCa) interval, widened "
        "for small sets; a change, a BTS and the prediction measures get percentile intervals.",
        ("efron1979", "efron1987"),
        ("bootstrap interval", "bootstrap", "95% CI", "CI"),
    ),
    "change": Term(
        "change from pretrained, delta d",
        "delta d = d(finetuned) - d(pretrained), measured on the same images in both networks. Its interval and "
        "two-sided p come from paired bootstraps that count the interaction of targets and attributes once "
        "(ci_method corrected normal).",
        ("efron1979", "docs"),
        ("change from pretrained", "delta d"),
    ),
    "detectable-d": Term(
        "detectable d",
        "The smallest |d| that the iEAT's permutation test detects with 80% power at the configured alpha "
        "(unadjusted), for the row's numbers of images of X and Y. A not significant row with a detectable d "
        "of 1.5 says an association below 1.5 could easily have been missed.",
        ("cohen1988",),
        ("detectable d", "detectable_d", "80% power"),
    ),
    "bts": Term(
        "BTS (Bias Transfer Score; intra, inter)",
        "Spearman's rank correlation between the pretrained and the finetuned network's similarities of the "
        "same classes (intra) or class pairs (inter). Near 1 says finetuning kept the ranking; its p is a "
        "permutation p over orderings and its interval a bootstrap over images.",
        ("ranjit2023", "spearman1904"),
        ("Bias Transfer Score", "BTS"),
    ),
    "intra-class": Term(
        "intra-class similarity",
        "The mean cosine similarity over all pairs of different images of one class, in one network's "
        "embeddings. This tool computes it exactly (the expectation of the paper's sampling algorithm), with a "
        "jackknife standard error.",
        ("ranjit2023",),
        ("intra-class similarity", "intra-class"),
    ),
    "inter-class": Term(
        "inter-class similarity",
        "The mean cosine similarity over all pairs of one image of a class and one of another. This tool "
        "computes it exactly, with a two-sample jackknife standard error.",
        ("ranjit2023",),
        ("inter-class similarity", "inter-class"),
    ),
    "scratch": Term(
        "network trained from scratch (the BTS reference)",
        "The same architecture trained from random initialisation on the finetuning data alone, with the "
        "finetuning recipe and seeds. It shows what the target data teach on their own: the reference against "
        "which retention of the pretrained network's biases is judged.",
        ("docs",),
        ("trained from scratch", "scratch network", "scratch networks", "target data alone"),
    ),
    "cka": Term(
        "linear CKA (kept, replaced)",
        "How much of the pretrained embedding's linear structure a finetuned (or scratch) network's embedding of "
        "the same images keeps: 1 when they differ by no more than a rotation and a scale, lower the more they "
        "differ, with a jackknife interval over images. A finetuned network kept the representation when its CKA "
        "exceeds the scratch network's (paired interval above 0), else it replaced it.",
        ("kornblith2019", "docs"),
        ("linear CKA", "CKA"),
    ),
    "retention": Term(
        "retention (retained, target data alone, undecided)",
        "How much better the pretrained ranking predicts the finetuned one than the scratch network's ranking "
        "does: rho(pretrained, finetuned) - rho(scratch, finetuned), with a paired bootstrap interval over the "
        "ranked classes. Retained when the interval lies above 0, target data alone when below, undecided "
        "otherwise.",
        ("docs",),
        ("retention", "retained", "undecided"),
    ),
    "seed": Term(
        "seed",
        "The number that fixes a training run's random choices: the initialisation of what is trained, the "
        "order of the data and the augmentation. The seeds of one dataset share its images, so their spread is "
        "training noise, not a new sample of data.",
        ("docs",),
        ("seed", "seeds"),
    ),
    "pooled": Term(
        "pooled over seeds",
        "One estimate from all finetuned seeds together: the BTS of the seeds' mean similarities, or a "
        "prediction measure averaged over seeds with every seed resampled on the same images. A pooled "
        "interval is of that mean network; the spread between seeds is the range the report gives beside it.",
        ("docs",),
        ("pooled over seeds", "seeds pooled", "pooled"),
    ),
    "leakage": Term(
        "leakage",
        "How well a cross-fitted logistic-regression attacker recovers the protected attribute (the figure in "
        "the image) from the ground-truth labels, a network's scores or its embedding, as balanced accuracy on "
        "held-out folds. Chance is 1 over the number of attribute values; the pretrained network's leakage is "
        "the baseline of a finetuned one's.",
        ("wang2019",),
        ("leakage",),
    ),
    "leakage-amplification": Term(
        "leakage amplification",
        "The model's leakage minus the leakage of ground-truth labels perturbed to the model's own per-class "
        "confusion counts (the same per-class F1). Above 0, the outputs carry more of the attribute than labels "
        "of the same quality would.",
        ("wang2019",),
        ("leakage amplification", "leakage_amplification"),
    ),
    "biasamp": Term(
        "BiasAmp (bias amplification)",
        "How much a classifier's predictions strengthen the co-occurrence of an attribute (the figure) and a "
        "task (an object) beyond the ground truth of the same images. Two kinds are computed: Zhao et al.'s, "
        "the change of the dominant figure's share among an object's images, and Wang & Russakovsky's "
        "directional BiasAmp A->T.",
        ("zhao2017", "wang2021"),
        ("BiasAmp", "bias amplification", "Zhao"),
    ),
    "directional": Term(
        "directional BiasAmp A->T (attribute to task)",
        "Bias amplification from attribute A to task T: the mean over (figure, object) pairs of how far the "
        "predictions move P(object | figure) beyond the ground truth, signed by the direction in which the pair "
        "co-occurs in the test split. Positive: the predictions strengthen existing associations; 0: they keep "
        "the ground truth's rates; negative: they weaken or reverse them.",
        ("wang2021",),
        ("BiasAmp A->T", "BiasAmp A→T", "directional"),
    ),
    "shift": Term(
        "shift",
        "For a figure and an object: how much more often than the ground truth the network predicts the object "
        "for that figure's images than for the other figures' images. The findings read a planted association "
        "by its shift, since a network that over-predicts an object for everyone shifts nothing.",
        ("wang2021", "docs"),
        ("shift",),
    ),
    "planted": Term(
        "planted pair",
        "An iEAT whose association was built into the synthetic pretraining data (in the demo, surfboards "
        "beside person_a in 90% of scenes and none in the target data). Its known answer: the pretrained "
        "network shows it (adjusted p below alpha, d > 0).",
        ("docs",),
        ("planted pair", "planted association", "planted"),
    ),
    "control": Term(
        "control pair",
        "An iEAT with no planted association, configured with role control. Its known answer: the pretrained "
        "network shows no association in either direction (adjusted and two-sided p at or above alpha).",
        ("docs",),
        ("control pair", "control pairs"),
    ),
    "known-answer": Term(
        "known answer",
        "What a test's data were built to show, checked in the pretrained network: a planted pair found, a "
        "control pair not found. Finetuned networks have no known answer; their rows carry verdicts.",
        ("docs",),
        ("known answer", "known answers"),
    ),
    "layer-profile": Term(
        "layer profile",
        "The iEATs and the BTS at several layers of each network, pretrained and after each finetuning seed, "
        "each layer's output pooled to one vector per image. It shows whether an association lives in early, "
        "texture-like features or late, semantic ones, and whether finetuning moves it.",
        ("docs",),
        ("layer profile", "layer profiles"),
    ),
    "trajectory": Term(
        "trajectory",
        "The similarities, iEATs and BTS at every embedded epoch of finetuning, epoch 0 being the pretrained "
        "network. It shows whether a measure moves steadily, jumps or turns back during training, not only "
        "where it ends.",
        ("docs",),
        ("trajectory", "trajectories"),
    ),
    "intervention": Term(
        "intervention",
        "A change to the finetuning data (for example rebalancing a co-occurrence), judged by the network "
        "finetuned on it against the one finetuned on the untouched data from the same weights and seed. Per "
        "seed the images are the units (a paired change of d); over seeds the seeds are (an exact sign-flip "
        "test).",
        ("docs",),
        ("intervention", "interventions"),
    ),
    "arm": Term(
        "finetuning arm",
        "One way of finetuning a model (a dataset, an intervention on it, a mitigation method), compared with "
        "another on the same pretrained weights, seeds and images by the change of iEAT d, of the prediction shift "
        "and of the validation metric. An arm can reduce an association in the predictions but not in the "
        "representation.",
        ("docs",),
        ("finetuning arm", "finetuning arms"),
    ),
    "claim": Term(
        "claim",
        "A statement about groups of models, such as the paper's that supervised models retain more bias than "
        "self-supervised ones, tested with the models as units. Each model contributes one value (the mean over "
        "its seeds), and the test re-partitions models, never images.",
        ("ranjit2023", "docs"),
        ("claim", "claims"),
    ),
}

#: Elements whose text is never linked: links, headings, code, tables, navigation, scripts.
SKIPPED = frozenset({"a", "h1", "h2", "h3", "h4", "h5", "h6", "code", "pre", "kbd", "table", "th", "nav", "title"})

#: The class of every link that :func:`link_terms` adds.
LINK_CLASS = "term"

# a raw-text element as one token, a comment, or a tag; the text between them is the page's text
_TOKEN = re.compile(r"<(script|style)\b.*?</\1\s*>|<!--.*?-->|<[^>]*>", re.S | re.I)
_TAG = re.compile(r"<(/?)([a-zA-Z][\w-]*)")
_VOID = frozenset({"br", "hr", "img", "input", "meta", "link", "wbr", "source", "col", "area", "base"})


def map_text(html: str, replace: Callable[[str], str], skip: frozenset[str] = SKIPPED) -> str:
    """``html`` with ``replace`` applied to each run of text outside tags and outside the ``skip`` elements;
    tags, attributes, comments, scripts and styles are kept as they are."""
    out, depth, start = [], 0, 0
    for match in _TOKEN.finditer(html):
        text = html[start : match.start()]
        out.append(replace(text) if text and not depth else text)
        token = match.group(0)
        tag = _TAG.match(token)
        if tag and tag[2].lower() in skip and tag[2].lower() not in _VOID and not token.endswith("/>"):
            depth = max(0, depth - 1) if tag[1] else depth + 1
        out.append(token)
        start = match.end()
    text = html[start:]
    out.append(replace(text) if text and not depth else text)
    return "".join(out)


def _phrase_pattern() -> tuple[re.Pattern, dict[str, str]]:
    anchors = {form.lower(): a for a, t in GLOSSARY.items() for p in t.phrases for form in (p, esc(p))}
    alternatives = "|".join(re.escape(p) for p in sorted(anchors, key=len, reverse=True))
    return re.compile(rf"(?<![\w-])(?:{alternatives})(?![\w-])", re.I), anchors


_PHRASES, _ANCHORS = _phrase_pattern()


def link_terms(html: str, href: str = "glossary.html") -> str:
    """``html`` with the first occurrence of each glossary term in its text linked to ``href#anchor``; text in
    tags, links, headings, code, tables and navigation is left alone, and so is a term the page already links."""
    linked = set(re.findall(rf'href="{re.escape(href)}#([\w-]+)"', html))

    def replace(text: str) -> str:
        def link(match: re.Match) -> str:
            anchor = _ANCHORS[match.group(0).lower()]
            if anchor in linked:
                return match.group(0)
            linked.add(anchor)
            return f'<a class="{LINK_CLASS}" href="{href}#{anchor}">{match.group(0)}</a>'

        return _PHRASES.sub(link, text)

    return map_text(html, replace)


def glossary_body() -> str:
    """The glossary as a definition list (one ``id`` per term) followed by its references."""
    entries = []
    for anchor, term in GLOSSARY.items():
        sources = "; ".join(f'<a href="#ref-{key}">{esc(REFERENCES[key][0])}</a>' for key in term.sources)
        entries.append(
            f'<dt id="{anchor}">{esc(term.name)}</dt><dd>{esc(term.definition)} '
            f'<span class="source">Source: {sources}.</span></dd>'
        )
    used = dict.fromkeys(key for term in GLOSSARY.values() for key in term.sources)
    references = "".join(f'<li id="ref-{key}">{esc(REFERENCES[key][1])}</li>' for key in used)
    return (
        f'<h1>Glossary</h1><dl class="glossary">{"".join(entries)}</dl>'
        f'<h2 id="references">References</h2><ol class="references">{references}</ol>'
    )


#: The rule that computes each headline measure and the summary (results/summary/<name>.csv) it writes to:
#: ``snakemake <summary> --forcerun <rule>`` recomputes the measure and every step between it and the table
#: (the target first: ``--forcerun`` takes every name after it as a rule).
REPRODUCE: dict[str, tuple[str, str]] = {
    "similarity": ("similarity", "similarity"),
    "bts": ("bts", "bts"),
    "cka": ("bts", "cka"),
    "ieat": ("ieat", "ieat"),
    "ieat_scratch": ("ieat", "ieat_scratch"),
    "ieat_change": ("change", "ieat_change"),
    "ieat_seeds": ("change", "ieat_seeds"),
    "similarity_change": ("change", "similarity_change"),
    "finetune_metrics": ("finetune_summary", "finetune_metrics"),
    "amplification": ("amplification", "amplification"),
    "amplification_terms": ("amplification", "amplification_terms"),
    "link": ("link", "link"),
    "link_correlation": ("link", "link_correlation"),
    "layer_profile": ("layer_profile", "layer_profile"),
    "trajectory": ("trajectory", "trajectory"),
    "attribution": ("attribution", "attribution"),
    "claims": ("claims", "claims"),
    "claim_values": ("claims", "claim_values"),
    "factors": ("factors", "factors"),
    "factor_values": ("factors", "factor_values"),
    "covariates": ("factors", "covariates"),
    "intervention": ("comparison_change", "intervention"),
    "comparison": ("comparison_change", "comparison"),
    "analysis_sets": ("analysis_set_summary", "analysis_sets"),
    "provenance": ("provenance", "provenance"),
}


def reproduce_command(measure: str) -> tuple[str, str]:
    """(rule, command) that recompute a headline measure (a key of REPRODUCE) into its summary table, in the
    run's folder; a run with its own config files adds them with ``--configfile``."""
    if measure not in REPRODUCE:
        raise KeyError(f"no reproduce command for measure {measure!r}; the measures are {', '.join(REPRODUCE)}")
    rule, summary = REPRODUCE[measure]
    return rule, f"snakemake --cores 1 {path('summary', summary=summary)} --forcerun {rule}"


def reproduce_block(measures: Sequence[str]) -> str:
    """The rule and the command behind each of ``measures``, as a list."""
    rows = "".join(
        f"<li>{esc(m)} (rule <code>{esc(rule)}</code>): <code>{esc(command)}</code></li>"
        for m in measures
        for rule, command in [reproduce_command(m)]
    )
    return (
        '<h2 id="reproduce">Reproduce a number</h2><p class="caption">Each summary table of this run, the rule '
        "that computes it and the command that recomputes it (run in the run's folder; add "
        "<code>--configfile</code> with the run's config files, or with <code>results/summary/config.yaml</code>, "
        f'the filled config this run used).</p><ul class="commands">{rows}</ul>'
    )


def _setting(config: Mapping, dotted: str):
    value = config
    for part in dotted.split("."):
        if not isinstance(value, Mapping) or part not in value:
            raise KeyError(f"the methods paragraph needs the setting {dotted!r}, which the run's results lack")
        value = value[part]
    return value


def _bibtex_authors(authors: Sequence[Mapping]) -> str:
    return " and ".join(
        f"{a['family-names']}, {a['given-names']}" if "family-names" in a else f"{{{a['name']}}}" for a in authors
    )


def bibtex(citation: Mapping) -> str:
    """BibTeX entries of the paper (CITATION.cff's preferred-citation) and of the software."""
    paper = citation["preferred-citation"]
    arxiv = next((i["value"] for i in paper.get("identifiers", []) if i["value"].startswith("arXiv:")), "")
    key = f"{paper['authors'][0]['family-names'].lower()}{paper['year']}"
    eprint = f"  eprint = {{{arxiv.removeprefix('arXiv:')}}},\n  archivePrefix = {{arXiv}},\n" if arxiv else ""
    return (
        f"@article{{{key},\n  author = {{{_bibtex_authors(paper['authors'])}}},\n"
        f"  title = {{{paper['title']}}},\n  journal = {{{paper['journal']}{' ' + arxiv if arxiv else ''}}},\n"
        f"{eprint}  year = {{{paper['year']}}}\n}}\n\n"
        f"@software{{biastransfer,\n  author = {{{_bibtex_authors(citation['authors'])}}},\n"
        f"  title = {{{citation['title']}}},\n  version = {{{citation['version']}}},\n"
        f"  year = {{{str(citation['date-released'])[:4]}}},\n  license = {{{citation['license']}}}\n}}\n"
    )


def methods_block(model: Mapping, citation: Mapping | None) -> str:
    """A methods paragraph of the run, with the settings its results model records (``run`` and ``settings`` of
    :func:`biastransfer.report.results.results_model`), and, with a citation (CITATION.cff), BibTeX of the paper
    and the software to paste. A missing setting is a KeyError naming it."""
    run, settings = _setting(model, "run"), _setting(model, "settings")
    ieat, bts, defaults = _setting(settings, "ieat"), _setting(settings, "bts"), _setting(run, "finetune")
    seeds = "; ".join(f"{d}: seeds {', '.join(map(str, s))}" for d, s in _setting(run, "seeds").items())
    scratch = "; ".join(f"{d}: seeds {', '.join(map(str, s))}" for d, s in _setting(run, "scratch_seeds").items() if s)
    adjust = _setting(settings, "adjust")
    text = (
        f"Each network embedded the images of every analysis set ({', '.join(_setting(run, 'analysis_sets'))}), "
        f"pretrained and after finetuning ({seeds}; {_setting(defaults, 'epochs')} epochs, learning rate "
        f"{_setting(defaults, 'lr')}, {_setting(defaults, 'optimizer')}"
        + (f"; trained from scratch on the target data as the BTS reference, {scratch}" if scratch else "")
        + "). Intra- and inter-class similarities are exact mean cosines over all image pairs, with jackknife "
        "standard errors. Each iEAT gives the effect size d, a permutation p "
        f"({_setting(ieat, 'alternative')} alternative, {_setting(ieat, 'permutations'):,} permutations, or every "
        f"partition when there are fewer; seed {_setting(ieat, 'seed')}) and a BCa bootstrap interval "
        f"({_setting(ieat, 'bootstrap'):,} replicates, level {_setting(ieat, 'ci_level')}). Each BTS is Spearman's "
        f"rho with a {_setting(bts, 'pvalue')} p and a percentile bootstrap interval "
        f"({_setting(bts, 'bootstrap'):,} replicates, level {_setting(bts, 'ci_level')}, seed "
        f"{_setting(bts, 'seed')}). p-values are adjusted by the {ADJUSTMENT_WORDS.get(adjust, adjust)} "
        f"procedure within each table, and a verdict is significant at alpha = {_setting(settings, 'alpha')}."
    )
    cite = f"<h3>BibTeX</h3><pre><code>{esc(bibtex(citation))}</code></pre>" if citation else ""
    return f'<h2 id="methods">Methods</h2><p>{esc(text)}</p>{cite}'
