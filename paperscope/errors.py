"""The one exception type for mistakes a user can fix (bad input, missing index, unknown id)."""


class UserError(Exception):
    """A problem with what the user gave us; its message is one line that says what to do.

    The CLI prints it on stderr and exits non-zero without a traceback; every other
    exception is a bug.
    """


class UnknownPaper(UserError):
    """A paper id the index does not hold (the service answers it with 404)."""


WRITE_ERRORS = {
    28: "no space left on the device",
    122: "disk quota exceeded",
    30: "read-only file system",
    13: "permission denied",
}


def write_error(exc: OSError, folder) -> UserError | None:
    """The UserError for a build or add into ``folder`` stopped for want of space or permission
    (ENOSPC, EDQUOT, EROFS, EACCES); None for any other OSError (a bug, not the user's)."""
    if exc.errno not in WRITE_ERRORS:
        return None
    where = f" ({exc.filename})" if exc.filename else ""
    return UserError(f"{folder}: stopped: {WRITE_ERRORS[exc.errno]}{where}; the index there is unchanged")


class UnknownCollection(UserError):
    """A collection name the index has none of (the service answers it with 404)."""
