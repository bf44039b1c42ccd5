"""The workflow layer: the only part of ``biastransfer`` that reads the config.

``Plan(config, basedir)`` (``biastransfer.workflow.plan``) is built once from the filled config
(rules/common.smk): every value normalised once, the targets, every path and, per rule, its settings as one
typed object (``biastransfer.workflow.settings``, one module per rule file in ``biastransfer.workflow.rules``)
that the rule passes whole and its script's ``main`` takes whole. The science packages (stats, data, models,
train, report) take plain values and never see the config.
"""
