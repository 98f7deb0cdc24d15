"""The GitHub Action: events in, evidence, outputs, one sticky comment and replies out."""

from pr_context.action.run import (
    FAIL_ON_CHOICES,
    ActionRun,
    ActionSettings,
    parse_fail_on,
    prepare,
    run_action,
)

__all__ = ["FAIL_ON_CHOICES", "ActionRun", "ActionSettings", "parse_fail_on", "prepare",
           "run_action"]
