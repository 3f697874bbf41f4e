"""The exception hierarchy. Every error a user can cause is a ``BackfillError`` whose message fits on one line.

    BackfillError
    ├── InvalidInput            bad dates, names, keys, config — refused before anything is written
    │   └── UnsafeName          a name or partition key that could escape the warehouse root
    ├── IllegalTransition       a version state change the life cycle (docs/DESIGN.md §3) does not allow
    ├── PublishConflict         compare-and-swap on the current pointer lost (another version won)
    ├── IntegrityError          a file on disk does not match its manifest / catalog row
    ├── NotFound                an unknown asset, partition, version or request
    └── PlanError               a request that cannot be planned (overlap, depends-on-past order, ...)

    OSError
    └── StorageError            the warehouse's storage failed an operation (endpoint refused or reset the
                                connection, timed out, denied access, disk full): not the user's doing and often
                                transient, so not a BackfillError — a gated step's RetryPolicy retries it
"""

from __future__ import annotations


class BackfillError(Exception):
    """Base class: a clear, one-line reason meant for the user."""


class InvalidInput(BackfillError):
    pass


class UnsafeName(InvalidInput):
    pass


class IllegalTransition(BackfillError):
    pass


class PublishConflict(BackfillError):
    def __init__(self, message: str, current_version_id: str | None):
        super().__init__(message)
        self.current_version_id = current_version_id


class IntegrityError(BackfillError):
    pass


class NotFound(BackfillError):
    pass


class PlanError(BackfillError):
    pass


class StorageError(OSError):
    """The warehouse's storage could not do what was asked; the message names the warehouse, the operation, the
    object and the storage's own reason (for S3: the endpoint URL) on one line.

    Not a ``BackfillError``: a gated step never retries those (a rejection or a bad input stays one), while a
    storage outage is worth the step's retries. The CLI still prints it as one ``error:`` line.
    """
