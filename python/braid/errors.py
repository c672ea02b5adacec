"""Braid's errors as Python exceptions.

Every failing C call becomes a BraidError whose message is Braid's own text
(braidGetLastError: it names the rank, the operation and its sequence number)
and whose ``code`` is the braidResult_t. Subclasses also derive from the
built-in exception a Python caller would expect to catch, so
``except ValueError`` catches a bad argument and ``except TimeoutError`` a
deadline.
"""


class BraidError(RuntimeError):
    """A Braid call failed. ``code`` is the braidResult_t value."""

    code = -1

    def __init__(self, message, code=None):
        super().__init__(message)
        if code is not None:
            self.code = code


class BraidSystemError(BraidError):
    """A system call failed (braidSystemError)."""

    code = 2


class InternalError(BraidError):
    """A bug in Braid (braidInternalError)."""

    code = 3


class InvalidArgumentError(BraidError, ValueError):
    """An argument was rejected before anything changed (braidInvalidArgument)."""

    code = 4


class InvalidUsageError(BraidError):
    """The call is not allowed in this state (braidInvalidUsage)."""

    code = 5


class RemoteError(BraidError):
    """Another rank failed or went away (braidRemoteError)."""

    code = 6


class BraidTimeoutError(BraidError, TimeoutError):
    """A wait passed BRAID_TIMEOUT_MS (braidTimeout)."""

    code = 8


_BY_CODE = {cls.code: cls for cls in (BraidSystemError, InternalError, InvalidArgumentError,
                                      InvalidUsageError, RemoteError, BraidTimeoutError)}


def from_code(code, message):
    """The exception for a braidResult_t."""
    return _BY_CODE.get(code, BraidError)(message, code)
