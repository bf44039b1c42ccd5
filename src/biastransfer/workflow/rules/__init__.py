"""Each rule's settings class, one module per rule file of the workflow (rules/<family>.smk); importing this
package registers them all (``biastransfer.workflow.settings.RULE_SETTINGS``)."""

from biastransfer.workflow.rules import analysis  # noqa: F401
