"""The GitHub Action: events in, evidence, outputs, annotations, one sticky comment and
replies out; and the workflow_run publisher that posts a fork's review."""

from pr_context.action.run import prepare, run_action
from pr_context.action.settings import (
    ANNOTATION_CHOICES,
    FAIL_ON_CHOICES,
    ActionRun,
    ActionSettings,
    parse_fail_on,
)

__all__ = ["ANNOTATION_CHOICES", "FAIL_ON_CHOICES", "ActionRun", "ActionSettings",
           "parse_fail_on", "prepare", "run_action"]
