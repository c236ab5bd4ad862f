"""The one exception type the tooling raises for bad input; the CLI turns it into a message."""


class OverlayError(Exception):
    """A problem the user can act on. The CLI prints the message and exits non-zero."""

    exit_code = 2
