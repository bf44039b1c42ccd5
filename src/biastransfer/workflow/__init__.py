"""The workflow layer: the only part of ``biastransfer`` that reads the config.

``Plan(config, basedir)`` (``biastransfer.workflow.plan``) is built once from the filled config
(rules/common.smk): every value normalised once, the targets, every path and, per rule, its settings as one
typed object (``biastransfer.workflow.settings``; the classes are in ``biastransfer.workflow.rules``, one module
per family of rule files) that the rule passes whole and its script's ``main`` takes whole. The science
packages (stats, data, models, train, report) take plain values and never see the config.

- The plan of one run: :class:`Plan`; a config switch as a boolean: :func:`switch`
- A rule's settings: :class:`Settings`
"""

from biastransfer._lazy import lazy_namespace as _lazy_namespace

#: Each public name and the module of this package that defines it, in the order docs/api.md lists them.
_EXPORTS = {
    "Plan": "plan",
    "switch": "plan",
    "Settings": "settings",
}
__all__ = list(_EXPORTS)
_lazy_namespace(__name__, _EXPORTS)
