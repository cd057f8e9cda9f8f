"""The extraction LLM as the settings name it, without its SDKs: whether one is
configured, how /health and `pps doctor` show it, and a probe of its endpoint.

engine.llm.client, which imports the OpenAI and Anthropic SDKs and Graphiti (seconds on
a busy machine), is loaded only by what talks to the LLM; a server or a command that
only needs to say that none is configured never loads it.
"""

from __future__ import annotations

from urllib.parse import urlsplit

import httpx

from engine.kernel.config import Settings
from engine.llm import dialect

NOT_CONFIGURED = (
    "no extraction LLM is configured (LLM_PROVIDER=none): graph jobs wait. Set LLM_PROVIDER "
    "(openai, anthropic or openai_compatible), LLM_MODEL, LLM_API_KEY and, for a local "
    "server, LLM_BASE_URL; then restart or run `pps queue retry`"
)


class NotConfigured(RuntimeError):
    """Raised by the placeholder client when LLM_PROVIDER=none."""


def describe(settings: Settings) -> dict:
    """The LLM as /health and `pps doctor` show it (no key, no path)."""
    if settings.llm_provider == "none":
        return {"provider": "none", "reason": NOT_CONFIGURED}
    base = settings.llm_base_url
    return {
        "provider": settings.llm_provider,
        "model": settings.llm_model,
        "endpoint": urlsplit(base).netloc if base else "default",
    }


def structured_output(settings: Settings) -> dict:
    """How an openai_compatible LLM is asked for JSON, for `pps doctor`: the setting, or
    what was learned from the endpoint (engine.llm.dialect); nothing for the others."""
    return dialect.describe(settings)


def probe(settings: Settings) -> dict:
    """Ask the configured LLM endpoint for its models (no tokens spent): for `pps doctor`.
    /health does not call this; it reports what the graph jobs saw."""
    if settings.llm_provider == "none":
        return {"status": "unconfigured", "reason": NOT_CONFIGURED}
    if settings.llm_provider == "anthropic":  # its SDK adds the /v1 to the base URL
        base = (settings.llm_base_url or "https://api.anthropic.com").rstrip("/") + "/v1"
    else:
        base = (settings.llm_base_url or "https://api.openai.com/v1").rstrip("/")
    headers = {"anthropic-version": "2023-06-01"}
    if settings.llm_api_key:
        key = settings.llm_api_key.get_secret_value()
        headers |= {"Authorization": f"Bearer {key}", "x-api-key": key}
    try:
        answer = httpx.get(f"{base}/models", headers=headers, timeout=5)
    except httpx.HTTPError as exc:
        return {"status": "down", "error": f"{urlsplit(base).netloc} unreachable: {exc}"}
    if answer.status_code in (401, 403):
        return {"status": "refused", "error": f"the key was refused ({answer.status_code})"}
    if answer.status_code >= 400:
        return {"status": "down", "error": f"GET /models answered {answer.status_code}"}
    return {"status": "ok"}
