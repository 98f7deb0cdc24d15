"""pr-context: callers, linked tests and possibly-stale docs for every symbol a PR changes."""

__version__ = "0.1.0"
