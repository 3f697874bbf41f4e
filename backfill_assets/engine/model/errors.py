"""The exception hierarchy. Every error a user can cause is a ``BackfillError`` whose message fits on one line.

    BackfillError
    ├── InvalidInput            bad dates, names, keys, config — refused before anything is written
    │   ├── InvalidField        ... in named input fields, which each surface words its own way (--to, to_day)
    │   ├── UnsafeName          a name or partition key that could escape the warehouse root
    │   └── NotAuthorized       a stated name not on the code location's lists (approvers, owners, admins)
    ├── IllegalTransition       a state change the life cycle (docs/ARCHITECTURE.md#life-cycle) does not allow
    ├── PublishConflict         compare-and-swap on the current pointer lost (another version won)
    ├── AssetOwnedElsewhere     another code location on the same catalog owns the asset name: nothing written
    ├── IntegrityError          a file on disk does not match its manifest / catalog row
    │   └── ManifestMismatch    a version's _manifest.json missing, or not the one written (its digest differs)
    ├── NotFound                an unknown asset, partition, version or request
    ├── PlanError               a request that cannot be planned (overlap, depends-on-past order, ...)
    │   └── RefusedField        ... because of named input fields
    ├── CatalogSchemaMismatch   the catalog's schema version is not this code's: refused when opened, nothing
    │                           changed (`backfill-assets catalog upgrade`, or a newer backfill_assets)
    ├── CatalogDamaged          the catalog is not a database, is damaged, is a directory, or lacks tables of its
    │                           schema version: restore it from a backup (docs/OPERATIONS.md)
    ├── CatalogEmpty            an empty or missing catalog beside a warehouse that holds versions: refused, not
    │                           created (`backfill-assets catalog init --force` starts over)
    ├── CatalogBusy             a catalog statement waited past its lock or statement timeout (a lock held by
    │                           another session), or SQLite's busy timeout
    └── TargetBusy              no write slot of the step's target freed within its wait (the previous version
                                keeps serving; the cell can be run again)

    FieldMessage (a mixin of InvalidField and RefusedField): the message's template and the fields it names

A message that quotes what a user gave quotes at most a bounded prefix of it (``quoted``; ``FieldMessage`` bounds
every value it is given), so a megabyte of input never becomes a megabyte of error.

    OSError
    └── StorageError            the warehouse's storage failed an operation (endpoint refused or reset the
                                connection, timed out, denied access, disk full): not the user's doing and often
                                transient, so not a BackfillError — a gated step's RetryPolicy retries it
"""

from __future__ import annotations

import string
from collections.abc import Callable
from typing import Any

# How much of a user's input an error message quotes (``quoted``, and ``{value!r}`` in a FieldMessage template),
# and of any other value a FieldMessage renders (``{value}``: usually our own lists of what is allowed).
QUOTE_LIMIT = 80
VALUE_LIMIT = 200


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, at most ``limit`` characters of it: a longer value is quoted as its
    prefix and how long it was, e.g. ``'aaaa…' (1048576 characters)``."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


def bounded(text: str, limit: int = VALUE_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, saying so (for values rendered without quotes)."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


class _Bounded:
    """A FieldMessage value as its template renders it: ``{v!r}`` is ``quoted``, ``{v}`` (or ``{v:spec}``)
    ``bounded``."""

    __slots__ = ("value",)

    def __init__(self, value: object):
        self.value = value

    def __repr__(self) -> str:
        return quoted(self.value)

    def __str__(self) -> str:
        return bounded(str(self.value))

    def __format__(self, spec: str) -> str:
        return bounded(format(self.value, spec))


class BackfillError(Exception):
    """Base class: a clear, one-line reason meant for the user."""


class InvalidInput(BackfillError):
    pass


class UnsafeName(InvalidInput):
    pass


class FieldMessage(BackfillError):
    """An error about named fields of an operation's input (``to_day``, ``max_active``).

    ``template`` is a ``str.format`` template: ``{name}`` placeholders without a value are field names, the rest
    are ``values`` (user input goes there, never into the template, so its braces are safe). The message names
    the fields as the Python API does; the CLI words them as its flags (``--to``), the Launchpad as its config
    keys, with ``worded``: one validation, each surface's words.
    """

    def __init__(self, template: str, **values: Any):
        self.template = template
        self.values = values
        self.fields = tuple(
            name for _, name, _, _ in string.Formatter().parse(template) if name and name not in values
        )
        super().__init__(self.worded(str))

    def worded(self, name_of: Callable[[str], str]) -> str:
        """The message with each field named by ``name_of`` (a surface's word for it)."""
        values = {key: _Bounded(value) for key, value in self.values.items()}
        return self.template.format_map({**{f: name_of(f) for f in self.fields}, **values})

    def __reduce__(self) -> tuple[Callable[..., FieldMessage], tuple[Any, ...]]:  # picklable across processes
        return (_rebuild, (type(self), self.template, self.values))


def _rebuild(kind: type[FieldMessage], template: str, values: dict[str, Any]) -> FieldMessage:
    return kind(template, **values)


class IllegalTransition(BackfillError):
    pass


class PublishConflict(BackfillError):
    def __init__(self, message: str, current_version_id: str | None):
        super().__init__(message)
        self.current_version_id = current_version_id


class AssetOwnedElsewhere(BackfillError):
    """A code location began a version of an asset another code location on the same catalog owns."""

    def __init__(self, asset: str, owner: str, location: str):
        self.asset, self.owner, self.location = asset, owner, location
        super().__init__(
            f"{asset} belongs to code location {owner!r} on this catalog; {location!r} declares an asset of the same "
            "name and would overwrite its days: give the asset a key prefix in one location (gated_asset(key_prefix="
            "...)) or rename it, or give each location its own catalog (BACKFILL_CATALOG_URL) and warehouse "
            "(docs/OPERATIONS.md, several code locations)"
        )

    def __reduce__(self) -> tuple[type[AssetOwnedElsewhere], tuple[str, str, str]]:  # picklable
        return (AssetOwnedElsewhere, (self.asset, self.owner, self.location))

class IntegrityError(BackfillError):
    pass


class ManifestMismatch(IntegrityError):
    """A published version's ``_manifest.json`` is missing or is not the one written (altered, forged or
    corrupted): its sha256 is not the one the catalog keeps with the version."""


class NotFound(BackfillError):
    pass


class PlanError(BackfillError):
    pass


class NotAuthorized(InvalidInput):
    """The name given (an approver, a handoff's decider) is not one the code location's ``AccessPolicy`` allows;
    the message names who may; nothing changed."""


class CatalogSchemaMismatch(BackfillError):
    """A catalog made before its schema was versioned, at an older revision (the message names the upgrade
    command) or at one this code does not know (a newer backfill_assets wrote it)."""


class CatalogDamaged(BackfillError):
    """The catalog cannot be read as a catalog: not a database, damaged pages, a directory in its place, or tables
    its schema version has are missing. The message names it and says to restore it from a backup."""


class CatalogEmpty(BackfillError):
    """The catalog is empty or missing while the warehouse beside it holds versions: creating it anew would hide
    every published version, so it is refused, naming both."""


class CatalogBusy(BackfillError):
    """A catalog statement gave up waiting: PostgreSQL's lock or statement timeout, SQLite's busy timeout."""


class TargetBusy(BackfillError):
    """A step waited its whole ``target_wait_seconds`` for a write slot of its target."""


class InvalidField(FieldMessage, InvalidInput):
    """Bad input in named fields, refused before anything is written."""


class RefusedField(FieldMessage, PlanError):
    """Valid fields that cannot be planned together (``order`` backward with a depends-on-past asset)."""


class StorageError(OSError):
    """The warehouse's storage could not do what was asked; the message names the warehouse, the operation, the
    object and the storage's own reason (for S3: the endpoint URL) on one line.

    Not a ``BackfillError``: a gated step never retries those (a rejection or a bad input stays one), while a
    storage outage is worth the step's retries. The CLI still prints it as one ``error:`` line.
    """
