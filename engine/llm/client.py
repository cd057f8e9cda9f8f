"""The extraction LLM: the one module that talks to OpenAI, Anthropic or an
OpenAI-compatible server (Ollama, vLLM, llama.cpp), as a Graphiti `LLMClient`.

Each provider speaks its own wire: `openai` OpenAI's Responses API (structured outputs
by `json_schema`), `anthropic` Anthropic's Messages API (the answer forced into one tool
call, Graphiti's form, asked here without the `temperature` this SDK no longer takes),
`openai_compatible` the chat completions wire.

Three choices keep failures visible to the queue instead of hidden inside Graphiti:
- No retries here. The SDKs get `max_retries=0`, and Graphiti's own retries (a tenacity
  wrapper that sleeps 5-120 s inside a job; re-asking loops that repeat a call up to
  three times) are bypassed: a 429, a 5xx or 529, a timeout, a refusal or a reply that
  is not the JSON asked for fails the attempt after one call, and the queue retries it
  with its own backoff, jitter and dead-letter.
- An answer that can never succeed until a person acts (key refused, model or endpoint
  not found, no credit left) is recognised by `refusal()` and pauses the entity's graph
  queue.
- Every HTTP request is metered (calls, and the tokens its answer reports) into the
  `Usage` of the job that made it, through a context variable, so the daily budget
  counts what was spent, calls that timed out included.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar, cast
from urllib.parse import urlsplit

import anthropic
import httpx
import openai
from graphiti_core.llm_client import LLMClient
from graphiti_core.llm_client.anthropic_client import AnthropicClient
from graphiti_core.llm_client.config import DEFAULT_MAX_TOKENS, LLMConfig, ModelSize
from graphiti_core.llm_client.errors import EmptyResponseError, RateLimitError, RefusalError
from graphiti_core.llm_client.openai_client import OpenAIClient
from graphiti_core.llm_client.openai_generic_client import OpenAIGenericClient
from graphiti_core.prompts.models import Message
from pydantic import BaseModel, ValidationError

from engine.kernel import loop
from engine.kernel.config import Settings
from engine.llm import dialect
from engine.llm.budget import Usage
from engine.llm.endpoint import NOT_CONFIGURED, NotConfigured

if TYPE_CHECKING:
    from anthropic.types import MessageParam

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


async def _sent(request) -> None:
    """A call counts once it is sent, answered or not: one that times out may have been
    worked on (and billed) all the same."""
    usage = _usage.get()
    if usage is not None:
        usage.calls += 1


async def _meter(response) -> None:
    usage = _usage.get()
    if usage is None:
        return
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
    """Why no retry can succeed until a person acts (settings, credit), or None if this
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
            if status == 402 or getattr(error, "code", None) == "insufficient_quota":
                return (
                    f"the LLM account has no credit or quota left ({status}): "
                    "top it up, then `pps queue retry`"
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
    hooks: dict[str, list[Callable[..., Any]]] = {"request": [_sent], "response": [_meter]}
    if provider == "anthropic":
        messages_sdk = anthropic.AsyncAnthropic(
            api_key=config.api_key,  # never a key or credentials file of the environment
            base_url=settings.llm_base_url,
            max_retries=0,
            timeout=settings.llm_timeout_s,
            http_client=anthropic.DefaultAsyncHttpxClient(event_hooks=hooks),
        )
        return _Anthropic(config=config, client=messages_sdk)
    sdk = openai.AsyncOpenAI(
        api_key=config.api_key,
        base_url=settings.llm_base_url,
        max_retries=0,
        timeout=settings.llm_timeout_s,
        http_client=openai.DefaultAsyncHttpxClient(event_hooks=hooks),
    )
    if provider == "openai":
        return _OpenAI(config=config, client=sdk)
    if settings.llm_response_format != "auto":
        return _Compatible(config, sdk, settings.llm_response_format)
    return _Compatible(config, sdk, detect_response_format(settings), learn=settings)


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
    llm = client(settings)
    assert isinstance(llm, _Counted)  # every provider's client but none's, refused above
    # On the process's one loop; `_ask` bounds itself (PPS_LLM_TIMEOUT_S, then the close).
    return loop.run(_ask(llm, settings, system, prompt, answer, usage), None)


async def _ask(
    llm: _Counted, settings: Settings, system: str, prompt: str, answer: type[Answer], usage: Usage
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
        if isinstance(error, RefusalError):
            return Failed(f"the LLM declined to answer: {error}"[:300], unavailable=False)
        status = getattr(error, "status_code", None)
        if isinstance(error, openai.APIStatusError | anthropic.APIStatusError) and status in (
            503,
            529,
        ):
            return Failed(f"the LLM is overloaded ({status}): try again later", unavailable=True)
        if isinstance(error, openai.APIConnectionError | anthropic.APIConnectionError):
            return Failed(f"could not reach the LLM at {host}", unavailable=True)
        if isinstance(error, openai.APIStatusError | anthropic.APIStatusError):
            return Failed(
                f"the LLM answered {error.status_code}: {error.message}"[:300], unavailable=False
            )
        if isinstance(error, ValidationError | ValueError | EmptyResponseError):
            # json.JSONDecodeError is a ValueError: a reply that is not the JSON asked for.
            return Failed(
                f"the LLM's reply was not the answer asked for ({type(error).__name__}: {error})"[
                    :300
                ],
                unavailable=False,
            )
        error = error.__cause__ or error.__context__
    return Failed(f"the LLM call failed: {type(exc).__name__}: {exc}"[:300], unavailable=False)


def detect_response_format(settings: Settings) -> dialect.Dialect:
    """What an endpoint is first asked in, with PPS_LLM_RESPONSE_FORMAT=auto: what it was
    found to speak before (engine.llm.dialect), else `json_object_schema` for a server
    that says it is llama.cpp's in /models (`owned_by: llamacpp`: every llama-server
    version takes it, older ones no `json_schema`), else `json_schema`, which a server
    that needs the other refuses in words `_Compatible` learns from."""
    learned = dialect.remembered(settings)
    if learned is not None:
        return learned.dialect
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
        log.warning("could not ask %s/models who serves it; starting with json_schema", base)
        return "json_schema"
    if "llamacpp" in owners:
        return dialect.remember(
            settings, "json_object_schema", "GET /models says owned_by llamacpp"
        ).dialect
    return "json_schema"


class _Counted:
    """Counts the calls that raise into the current Usage (see Usage.failed)."""

    client: Any  # the SDK's, as the Graphiti client this comes before in the bases holds it

    async def generate_response(self, *args, **kwargs) -> dict[str, Any]:
        try:
            # A mixin: the Graphiti client it comes before in the bases has the method.
            return await super().generate_response(*args, **kwargs)  # type: ignore[misc]
        except Exception as exc:
            usage = _usage.get()
            if usage is not None:
                usage.failed += 1
                usage.last_error = f"{type(exc).__name__}: {exc}"[:300]
            raise


class _OpenAIOnce(OpenAIClient):
    """OpenAI's Responses API, asked once, its refusals named."""

    MAX_RETRIES = 0  # Graphiti re-asks up to twice on a 4xx or a reply that does not parse

    def _handle_structured_response(self, response: Any) -> tuple[dict[str, Any], int, int]:
        # A refusal comes as a `refusal` part instead of the text (no JSON to parse).
        for item in response.output or []:
            for part in getattr(item, "content", None) or []:
                if part.type == "refusal":
                    raise RefusalError(part.refusal or "no reason given")
        return super()._handle_structured_response(response)


class _OpenAI(_Counted, _OpenAIOnce):
    pass


class _AnthropicOnce(AnthropicClient):
    """Anthropic's Messages API, asked once, the answer in one forced tool call."""

    async def generate_response(
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        model_size: ModelSize = ModelSize.medium,
        group_id: str | None = None,
        prompt_name: str | None = None,
        *,
        attribute_extraction: bool = False,
        model: str | None = None,
    ) -> dict[str, Any]:
        # Graphiti's loop re-asks up to twice on any error but a 429 (a 5xx, a 529, a
        # timeout, a refused key): the queue owns retries.
        self._apply_attribute_extraction_preamble(messages, attribute_extraction)
        reply = await self._generate_response(
            messages, response_model, max_tokens or self.max_tokens, model_size, model=model
        )
        if response_model is None:
            return reply
        return response_model.model_validate(reply).model_dump()

    # The reply itself, not Graphiti's (reply, tokens in, tokens out): only
    # `generate_response` above reads it, and the metering hook counts the tokens.
    async def _generate_response(  # type: ignore[override]
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int | None = None,
        model_size: ModelSize = ModelSize.medium,
        *,
        model: str | None = None,
    ) -> dict[str, Any]:
        tools, choice = self._create_tool(response_model)
        model = model or self.model
        reply = await self.client.messages.create(
            model=model,
            max_tokens=self._resolve_max_tokens(max_tokens, model),
            system=messages[0].content,
            # Graphiti's roles are text; after the system message, the SDK's own ones.
            messages=cast(
                "list[MessageParam]", [{"role": m.role, "content": m.content} for m in messages[1:]]
            ),
            tools=tools,
            tool_choice=choice,
        )
        if reply.stop_reason == "refusal":
            details = reply.stop_details
            why = details and (details.explanation or details.category)
            raise RefusalError(why or "stop_reason refusal, no reason given")
        for block in reply.content:
            if block.type == "tool_use":
                return block.input
        text = "".join(block.text for block in reply.content if block.type == "text")
        if text.strip():
            return self._extract_json_from_text(text)
        raise EmptyResponseError(
            f"no {choice.get('name')} tool call in the reply (stop_reason {reply.stop_reason})"
        )


class _Anthropic(_Counted, _AnthropicOnce):
    pass


class _Compatible(_Counted, OpenAIGenericClient):
    """Any OpenAI-compatible chat endpoint, in one of three structured-output dialects.

    With `learn` (the settings, when PPS_LLM_RESPONSE_FORMAT is auto), a refusal of the
    dialect spoken that names the `response_format` types the server accepts switches to
    the other and asks again at once (one more call, counted like any), and the dialect
    is remembered for the endpoint (engine.llm.dialect)."""

    def __init__(
        self,
        config: LLMConfig,
        sdk: openai.AsyncOpenAI,
        mode: str,
        *,
        learn: Settings | None = None,
    ):
        super().__init__(config, client=sdk, structured_output_mode="json_schema")
        self.learn = learn
        self.response_format_mode = mode

    @property  # type: ignore[override]
    def structured_output_mode(self) -> Literal["json_schema", "json_object"]:
        """Graphiti's own switch: in json_object and json_object_schema the schema goes
        into the prompt too (a grammar constrains the reply, and the model reads what
        is asked)."""
        return "json_schema" if self.response_format_mode == "json_schema" else "json_object"

    @structured_output_mode.setter
    def structured_output_mode(self, _: str) -> None:
        pass  # set by Graphiti's __init__; response_format_mode decides

    def _build_response_format(self, response_model) -> dict[str, Any]:
        if self.response_format_mode == "json_object_schema" and response_model is not None:
            return {"type": "json_object", "schema": response_model.model_json_schema()}
        return super()._build_response_format(response_model)

    async def _generate_response(  # type: ignore[override]
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_size: ModelSize = ModelSize.medium,
        *,
        model: str | None = None,
    ) -> dict[str, Any]:
        sent = self.response_format_mode
        try:
            return await super()._generate_response(
                messages, response_model, max_tokens, model_size, model=model
            )
        except openai.APIStatusError as exc:
            if self.learn is None or response_model is None or sent not in dialect.DIALECTS:
                raise
            # The server's own words: its error's message (OpenAI's shape), or the error
            # itself (LM Studio's is a bare string), up to a traceback after them.
            body = exc.body
            words = str((body.get("message") if isinstance(body, dict) else body) or exc)
            words = " ".join(words.split("\n\n")[0].split())
            answer = dialect.switch(sent, words)  # type: ignore[arg-type]
            if answer is None:
                raise
            said = f"{exc.status_code} to {sent}: {words}"
            self.response_format_mode = dialect.remember(self.learn, answer, said).dialect
        if self.structured_output_mode == "json_object" and response_model is not None:
            # As Graphiti's generate_response words it when it knows the mode beforehand.
            schema = json.dumps(response_model.model_json_schema())
            messages[
                -1
            ].content += f"\n\nRespond with a JSON object in the following format:\n\n{schema}"
        return await super()._generate_response(
            messages, response_model, max_tokens, model_size, model=model
        )

    # Graphiti's is tenacity's retrying wrapper, which mypy does not take for a method.
    async def _generate_response_with_retry(  # type: ignore[override]
        self,
        messages: list[Message],
        response_model: type[BaseModel] | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        model_size: ModelSize = ModelSize.medium,
        *,
        model: str | None = None,
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
