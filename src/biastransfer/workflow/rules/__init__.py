"""Each rule's settings class, one module per family of rule files (rules/*.smk); importing this package
registers them all (``biastransfer.workflow.settings.RULE_SETTINGS``)."""

from biastransfer.workflow.rules import analysis, inference, predictions, report  # noqa: F401
