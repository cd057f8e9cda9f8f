"""The extraction LLM: the one module that talks to OpenAI, Anthropic or an
OpenAI-compatible server (Ollama, vLLM, llama.cpp), as a Graphiti `LLMClient`.

Three choices keep failures visible to the queue instead of hidden inside Graphiti:
- No retries here. The SDKs get `max_retries=0` and Graphiti's own tenacity wrapper
  (which sleeps 5-120 s inside a job) is bypassed, so a 429, a 5xx, a timeout or a
  reply that is not valid JSON fails the attempt at once and the queue retries it with
  its own backoff, jitter and dead-letter.
- An answer that can never succeed with the current settings (key refused, model or
  endpoint not found) is recognised by `refusal()` and pauses the entity's graph queue.
- Every HTTP response is metered (calls and tokens) into the `Usage` of the job that
  made it, through a context variable, so the daily budget counts what was spent.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
from graphiti_core.llm_client import LLMClient
from graphiti_core.llm_client.anthropic_client import AnthropicClient
from graphiti_core.llm_client.config import LLMConfig
from graphiti_core.llm_client.errors import EmptyResponseError, RateLimitError, RefusalError
from graphiti_core.llm_client.openai_client import OpenAIClient
from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
from graphiti_core.prompts.models import Message
from pydantic import BaseModel, ValidationError

from engine.llm.budget import Usage
from engine.llm.endpoint import NOT_CONFIGURED, NotConfigured
from engine.store.config import Settings

log = logging.getLogger("pps.llm")


class Failed(RuntimeError):
    """`ask` got no usable answer. The message names the cause for a person to act on;
    `unavailable` is True when no answer came at all (timeout, unreachable, rate limit:
    worth trying later) and False when one came but was unusable (an error status,
    text that is not the JSON asked for)."""

    def __init__(self, reason: str, *, unavailable: bool):
        super().__init__(reason)
        self.unavailable = unavailable


Answer = TypeVar("Answer", bound=BaseModel)


_usage: contextvars.ContextVar[Usage | None] = contextvars.ContextVar("pps_llm_usage", default=None)


def count_into(usage: Usage) -> None:
    """Count the LLM calls made from this task (and the tasks it spawns) into `usage`."""
    _usage.set(usage)


async def _meter(response) -> None:
    usage = _usage.get()
    if usage is None:
        return
    usage.calls += 1
    try:
        await response.aread()
        usage.seconds += response.elapsed.total_seconds()
        body = json.loads(response.content)
        counted = body.get("usage") or {}
    except (ValueError, AttributeError, TypeError):
        return
    if "total_tokens" in counted:
        usage.tokens += int(counted["total_tokens"] or 0)
    else:  # Anthropic: input and output counted separately
        usage.tokens += int(counted.get("input_tokens") or 0)
        usage.tokens += int(counted.get("output_tokens") or 0)


def refusal(exc: BaseException) -> str | None:
    """Why no retry can succeed until a person changes the settings, or None if this
    error is worth retrying (429, 5xx, timeouts, connection errors, bad replies)."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, NotConfigured):
            return NOT_CONFIGURED
        if isinstance(error, openai.APIStatusError | anthropic.APIStatusError):
            status = error.status_code
            if status in (401, 403):
                return f"the LLM refused our key ({status}): check LLM_API_KEY"
            if status == 404:
                return (
                    "the LLM endpoint or model was not found (404): "
                    "check LLM_BASE_URL and LLM_MODEL"
                )
        error = error.__cause__ or error.__context__
    return None


def client(settings: Settings) -> LLMClient:
    """The Graphiti LLM client for the settings (a refusing one when provider is none)."""
    provider = settings.llm_provider
    if provider == "none":
        return _Unconfigured()
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else None
    config = LLMConfig(
        api_key=key or "not-needed",
        model=settings.llm_model,
        small_model=settings.llm_small_model or settings.llm_model,
        base_url=settings.llm_base_url,
    )
    hooks = {"response": [_meter]}
    if provider == "anthropic":
        sdk = anthropic.AsyncAnthropic(
            api_key=key,
            base_url=settings.llm_base_url,
            max_retries=0,
            timeout=settings.llm_timeout_s,
            http_client=anthropic.DefaultAsyncHttpxClient(event_hooks=hooks),
        )
        return _Anthropic(config=config, client=sdk)
    sdk = openai.AsyncOpenAI(
        api_key=config.api_key,
        base_url=settings.llm_base_url,
        max_retries=0,
        timeout=settings.llm_timeout_s,
        http_client=openai.DefaultAsyncHttpxClient(event_hooks=hooks),
    )
    if provider == "openai":
        return _OpenAI(config=config, client=sdk)
    mode = settings.llm_response_format
    if mode == "auto":
        mode = detect_response_format(settings)
    return _Compatible(config, sdk, mode)


def ask(settings: Settings, system: str, prompt: str, answer: type[Answer], usage: Usage) -> Answer:
    """One structured answer from the configured LLM, for a caller that waits for it (an
    MCP tool, a REST request) rather than a queued job.

    It goes through the same client as extraction, so every provider and structured-output
    dialect works and the calls are metered into `usage`. The whole exchange, Graphiti's
    own re-prompting on an unparseable reply included, is bounded by PPS_LLM_TIMEOUT_S.
    Raises NotConfigured when LLM_PROVIDER=none and Failed for everything else.
    """
    if settings.llm_provider == "none":
        raise NotConfigured(NOT_CONFIGURED)
    return asyncio.run(_ask(client(settings), settings, system, prompt, answer, usage))


async def _ask(
    llm: LLMClient, settings: Settings, system: str, prompt: str, answer: type[Answer], usage: Usage
) -> Answer:
    count_into(usage)
    messages = [Message(role="system", content=system), Message(role="user", content=prompt)]
    try:
        reply = await asyncio.wait_for(
            llm.generate_response(messages, answer, prompt_name=answer.__name__),
            settings.llm_timeout_s,
        )
        return answer.model_validate(reply)
    except Exception as exc:
        raise _failure(exc, settings) from exc
    finally:
        await llm.client.close()


def _failure(exc: BaseException, settings: Settings) -> Failed:
    """What went wrong, in words, from the SDK's exception (or the ones it caused)."""
    reason = refusal(exc)
    if reason is not None:
        return Failed(reason, unavailable=False)
    base = settings.llm_base_url
    host = urlsplit(base).netloc if base else f"the {settings.llm_provider} API"
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, TimeoutError | openai.APITimeoutError | anthropic.APITimeoutError):
            return Failed(
                f"the LLM did not answer within {settings.llm_timeout_s:g}s (PPS_LLM_TIMEOUT_S)",
                unavailable=True,
            )
        if isinstance(error, RateLimitError | openai.RateLimitError | anthropic.RateLimitError):
            return Failed("the LLM is rate-limiting us (429): try again later", unavailable=True)
        if isinstance(error, openai.APIConnectionError | anthropic.APIConnectionError):
            return Failed(f"could not reach the LLM at {host}", unavailable=True)
        if isinstance(error, openai.APIStatusError | anthropic.APIStatusError):
            return Failed(
                f"the LLM answered {error.status_code}: {error.message}"[:300], unavailable=False
            )
        if isinstance(error, ValidationError | ValueError | EmptyResponseError | RefusalError):
            # json.JSONDecodeError is a ValueError: a reply that is not the JSON asked for.
            return Failed(
                f"the LLM's reply was not the answer asked for ({type(error).__name__}: {error})"[
                    :300
                ],
                unavailable=False,
            )
        error = error.__cause__ or error.__context__
    return Failed(f"the LLM call failed: {type(exc).__name__}: {exc}"[:300], unavailable=False)


def detect_response_format(settings: Settings) -> str:
    """llama.cpp servers reject OpenAI's `json_schema` but accept `json_object` with the
    schema inside; they say who they are in /models (`owned_by: llamacpp`)."""
    base = (settings.llm_base_url or "").rstrip("/")
    if not base:
        return "json_schema"
    headers = {}
    if settings.llm_api_key:
        headers["Authorization"] = f"Bearer {settings.llm_api_key.get_secret_value()}"
    try:
        listing = httpx.get(f"{base}/models", headers=headers, timeout=5).json()
        owners = {m.get("owned_by") for m in listing.get("data", []) if isinstance(m, dict)}
    except (httpx.HTTPError, ValueError, AttributeError):
        log.warning("could not ask %s/models who serves it; assuming json_schema", base)
        return "json_schema"
    return "json_object_schema" if "llamacpp" in owners else "json_schema"


class _Counted:
    """Counts the calls that raise into the current Usage (see Usage.failed)."""

    async def generate_response(self, *args, **kwargs) -> dict[str, Any]:
        try:
            return await super().generate_response(*args, **kwargs)
        except Exception as exc:
            usage = _usage.get()
            if usage is not None:
                usage.failed += 1
                usage.last_error = f"{type(exc).__name__}: {exc}"[:300]
            raise


class _OpenAI(_Counted, OpenAIClient):
    pass


class _Anthropic(_Counted, AnthropicClient):
    pass


class _Compatible(_Counted, OpenAIGenericClient):
    """Any OpenAI-compatible chat endpoint, in one of three structured-output dialects."""

    def __init__(self, config: LLMConfig, sdk: openai.AsyncOpenAI, mode: str):
        structured = "json_schema" if mode == "json_schema" else "json_object"
        super().__init__(config, client=sdk, structured_output_mode=structured)
        self.response_format_mode = mode

    def _build_response_format(self, response_model) -> dict[str, Any]:
        if self.response_format_mode == "json_object_schema" and response_model is not None:
            return {"type": "json_object", "schema": response_model.model_json_schema()}
        return super()._build_response_format(response_model)

    async def _generate_response_with_retry(
        self, messages, response_model=None, max_tokens=None, model_size=None, *, model=None
    ) -> dict[str, Any]:
        # One attempt: the queue owns retries (see the module docstring).
        return await self._generate_response(
            messages, response_model, max_tokens or self.max_tokens, model_size, model=model
        )


class _Unconfigured(LLMClient):
    """Stands in when LLM_PROVIDER=none, so Graphiti never builds a default OpenAI client;
    searching needs no LLM, and adding raises NotConfigured (the job waits)."""

    def __init__(self):
        super().__init__(LLMConfig())

    async def _generate_response(self, *args, **kwargs) -> dict[str, Any]:
        raise NotConfigured(NOT_CONFIGURED)
