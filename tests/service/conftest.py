"""The real-instance fixtures (``env``, ``refusal_env``), defined once in tests/instance_env.py."""

from tests.instance_env import env, refusal_env  # noqa: F401 - pytest finds fixtures by the names a conftest holds
