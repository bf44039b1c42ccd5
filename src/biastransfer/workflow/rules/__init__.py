"""Each rule's settings class, one module per family of rule files (rules/*.smk); importing this package
registers them all (``biastransfer.workflow.settings.RULE_SETTINGS``)."""

from biastransfer.workflow.rules import analysis, data, inference, predictions, report, zoo  # noqa: F401
