"""Typed library errors. The CLI maps them to exit codes and the JSON envelope in one place."""

from __future__ import annotations


class BoxMemoryError(Exception):
    """Base error: `code` is the stable machine name, `exit_code` the CLI exit code."""

    code = "error"
    exit_code = 1

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)


class UsageProblem(BoxMemoryError):
    code = "usage_error"
    exit_code = 2


class InvalidInput(UsageProblem):
    """Bad input from the caller (title, team, kind, content...). Nothing was written."""

    code = "invalid_input"


class InvalidFile(BoxMemoryError):
    """A file in the workspace cannot be parsed (config, index, frontmatter)."""

    code = "invalid_file"


class WorkspaceNotFound(BoxMemoryError):
    code = "workspace_not_found"
    exit_code = 3


class BackendUnavailable(BoxMemoryError):
    """Box MCP not connected, auth failed, tool missing, Box Drive folder missing."""

    code = "backend_unavailable"
    exit_code = 4


class AuthError(BackendUnavailable):
    code = "auth_failed"


class ToolMissing(BackendUnavailable):
    code = "tool_missing"


class ToolDisabled(BackendUnavailable):
    code = "tool_disabled"


class Incompatible(BackendUnavailable):
    """The server's catalogue cannot take a call box-memory needs (a required or essential
    argument with no counterpart in the tool's inputSchema)."""

    code = "incompatible"


class BoxToolError(BoxMemoryError):
    """A Box tool answered with an error (relayed Box API error). `status`/`box_code` when known.

    `attempts` > 1 means earlier attempts of the same call failed in transit (timeout, dropped
    connection, 5xx), so a write may already have been applied: a 409 then can be our own write.
    """

    code = "box_error"

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        box_code: str | None = None,
        body: object = None,
        attempts: int = 1,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.box_code = box_code
        self.body = body
        self.attempts = attempts


class ContentUnverified(BoxToolError):
    """Box gave no content for a file whose sha1 matches its listing (text representation pending
    or not byte-exact, download missing or different), even after retries. Nothing was cached."""

    code = "content_unverified"


class TooLargeForBox(BoxToolError):
    """A file is over what Box takes in one upload (its direct upload: 50 MB), which is all Box's
    MCP upload tools offer. Raised before any byte is sent; the message names the file, its size
    and what to do."""

    code = "file_too_large"


class WriteRefused(BoxToolError):
    """Box refused a write for a documented rule (`rule`: shared_link, external_collaborator or
    file_type); the message names the item, the rule and what to do."""

    code = "write_refused"

    def __init__(self, message: str, *, rule: str, cause: BoxToolError | None = None) -> None:
        super().__init__(
            message,
            status=cause.status if cause else None,
            box_code=cause.box_code if cause else None,
            body=cause.body if cause else None,
        )
        self.rule = rule


class FileBusy(BoxMemoryError):
    """A file could not be replaced after bounded retries (held open by another program)."""

    code = "file_busy"


class LockBusy(BoxMemoryError):
    code = "lock_busy"
    exit_code = 5


class IntegrityProblem(BoxMemoryError):
    code = "integrity_problem"
    exit_code = 6


class NotFound(BoxMemoryError):
    code = "not_found"


class Unreadable(BoxMemoryError):
    """The user may not read this file or folder (a team boundary: Box 403/404 or a local EACCES).

    Readers skip it and say so once; it is never taken for a missing, orphaned or deleted file.
    """

    code = "permission_denied"


class DuplicateMemory(BoxMemoryError):
    code = "duplicate"


class HeldMemory(BoxMemoryError):
    code = "held"
