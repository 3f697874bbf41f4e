"""The exception hierarchy. Every error a user can cause is a ``BackfillError`` whose message fits on one line.

    BackfillError
    ├── InvalidInput            bad dates, names, keys, config — refused before anything is written
    │   └── UnsafeName          a name or partition key that could escape the warehouse root
    ├── IllegalTransition       a version state change the life cycle (docs/DESIGN.md §3) does not allow
    ├── PublishConflict         compare-and-swap on the current pointer lost (another version won)
    ├── IntegrityError          a file on disk does not match its manifest / catalog row
    ├── NotFound                an unknown asset, partition, version or request
    └── PlanError               a request that cannot be planned (overlap, depends-on-past order, ...)
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
