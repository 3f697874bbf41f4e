"""A minimal GraphQL client for dagster-webserver (urllib only; no extra dependency for the bench)."""

from __future__ import annotations

import json
import urllib.request


class GraphQLError(RuntimeError):
    pass


def post(url: str, query: str, variables: dict | None = None, timeout: float = 30.0) -> dict:
    body = json.dumps({"query": query, "variables": variables or {}}).encode()
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        payload = json.loads(resp.read())
    if payload.get("errors"):
        raise GraphQLError(json.dumps(payload["errors"])[:2000])
    return payload["data"]
