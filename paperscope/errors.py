"""The one exception type for mistakes a user can fix (bad input, missing index, unknown id)."""


class UserError(Exception):
    """A problem with what the user gave us; its message is one line that says what to do.

    The CLI prints it on stderr and exits non-zero without a traceback; every other
    exception is a bug.
    """


class NotFound(UserError):
    """Something asked for by name that the index does not hold: a paper, a collection, a topic,
    a field to filter on (the service answers 404)."""


class UnknownPaper(NotFound):
    """A paper id the index does not hold."""


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


class UnknownCollection(NotFound):
    """A collection name the index has none of."""


def shown(text, limit: int = 80) -> str:
    """Text a user gave, as an error message quotes it: on one line (unprintable characters
    escaped, as ``\\n``) and at most ``limit`` characters (longer: cut, with "…")."""
    text = "".join(char if char.isprintable() else char.encode("unicode_escape").decode() for char in str(text))
    return text if len(text) <= limit else text[: limit - 1] + "…"


class Contradiction(UserError):
    """A request that contradicts itself (``--new`` with ``--since``, ``--not`` naming the
    collection itself): the service answers 409, the command line as any user error."""


class ServiceFailed(Exception):
    """A service a fetch asks (arXiv, OpenReview, OpenAlex) failed in a way that is not the user's:
    down after every retry, or out of credits. Its message is one line naming the service and what
    happened; the CLI prints it and exits 1, the fetch's state kept for going on later."""


class Busy(Exception):
    """Another run holds what this one needs (an update of the same index): not the user's mistake
    and nothing done; the CLI prints the one line and exits 1, so that cron tells it apart."""
