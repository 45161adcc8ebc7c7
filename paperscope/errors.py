"""The one exception type for mistakes a user can fix (bad input, missing index, unknown id)."""


class UserError(Exception):
    """A problem with what the user gave us; its message is one line that says what to do.

    The CLI prints it on stderr and exits non-zero without a traceback; every other
    exception is a bug.
    """
