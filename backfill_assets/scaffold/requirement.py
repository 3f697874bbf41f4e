"""The dependency a new project declares on this library, written the way the library was installed here, so the
project's own ``pip install -e .`` finds it wherever this one came from.

pip records where a distribution came from in its ``direct_url.json`` (PEP 610): a local folder or file, a URL,
or a version control checkout. Installed from one of those, the library is not on any index under this version,
so the project names the same place (a PEP 508 direct reference, ``backfill_assets[dg] @ <url>``); installed from
an index (no ``direct_url.json``), a version specifier is enough."""

from __future__ import annotations

import json
from importlib import metadata

DISTRIBUTION = "backfill_assets"
EXTRAS = "[dg]"


def library_requirement(distribution: metadata.Distribution | None = None) -> str:
    """``backfill_assets[dg] @ <where it came from>`` for a path, URL or VCS install, else ``>=<version>``."""
    dist = distribution if distribution is not None else _installed()
    url = direct_url(dist.read_text("direct_url.json"))
    if url is None:
        return f"{DISTRIBUTION}{EXTRAS}>={dist.version}"
    return f"{DISTRIBUTION}{EXTRAS} @ {url}"


def _installed() -> metadata.Distribution:
    """The installed distribution: run from inside a checkout, the folder's own build metadata
    (``backfill_assets.egg-info``, which records no origin) comes first on ``sys.path`` and would hide it."""
    found = list(metadata.distributions(name=DISTRIBUTION))
    if not found:
        return metadata.distribution(DISTRIBUTION)  # raises PackageNotFoundError, naming it
    return next((d for d in found if d.read_text("direct_url.json")), found[0])


def direct_url(recorded: str | None) -> str | None:
    """The PEP 508 URL of a PEP 610 record (``vcs+url@commit`` for a checkout), or None without a usable one."""
    if not recorded:
        return None
    try:
        info = json.loads(recorded)
    except json.JSONDecodeError:
        return None  # a damaged record says nothing reliable about where the library came from
    url = info.get("url") if isinstance(info, dict) else None
    if not isinstance(url, str) or not url:
        return None
    vcs = info.get("vcs_info")
    if isinstance(vcs, dict) and vcs.get("vcs"):
        # The exact commit installed here, so the project gets the same code, not whatever the branch holds now.
        revision = vcs.get("commit_id") or vcs.get("requested_revision")
        return f"{vcs['vcs']}+{url}" + (f"@{revision}" if revision else "")
    return url
