"""A stand-in extraction LLM behind the real wires (HTTP on 127.0.0.1), one server for
the three APIs pps speaks:

- `POST /v1/chat/completions`, the OpenAI-compatible chat wire (`openai_compatible`);
- `POST /v1/responses`, OpenAI's Responses API with a `json_schema` text format, which
  the `openai` provider's structured outputs use;
- `POST /v1/messages`, Anthropic's Messages API with one forced tool (the `anthropic`
  provider's structured outputs: the answer is the tool call's `input`);

and `GET /v1/models` for each. The only stand-in the tests allow. It is also the model of
an agent host the tests run for real (Codex, Claude Code): a streamed `POST /v1/responses`
or `/v1/messages` is a turn, answered `turn_reply` as server-sent events and its body kept
in `turns`.

It answers each Graphiti prompt with JSON that is valid for that prompt's response model
(named by the `json_schema`, the tool, or, in json_object mode, the schema Graphiti
appends to the prompt): entities are the capitalised words of the current message, facts
join the entities that share a sentence, and a duplicate is an exact name (or fact)
match; a summary (summarize_messages) repeats the turns it was given.

It can be told to answer 429, 500, 503, 529 (Anthropic's overloaded), 401, no credit
left (`quota`: OpenAI's 429 `insufficient_quota`, Anthropic's 402), a refusal
(OpenAI's `refusal` content, Anthropic's `stop_reason: refusal`), hang, garbage, a wrong
shape, an empty answer (the schema's smallest value), or slowly (`slow_s`, then
normally), for the next N calls or until told otherwise. An error comes in the shape of
the wire it answers (OpenAI's `{"error": {"type", "code"}}`, Anthropic's `{"type":
"error", "error": {"type"}}`). It counts calls, and the calls on each wire.

On the chat wire it can be one of the servers people run locally (`server`, one of
SERVERS), each with what it says in `GET /v1/models` and what it does with each
`response_format`, as their source has it (docs/settings.md, "Structured output"):
llama.cpp's `llama-server` (and one from before it took `json_schema`),
llama-cpp-python's server, Ollama's `/v1`, vLLM and LM Studio, their refusals in their
own status and words.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = (
    "429",
    "500",
    "503",
    "529",
    "401",
    "quota",
    "refusal",
    "hang",
    "garbage",
    "wrong_shape",
    "empty",
    "slow",
)
REFUSAL = "I'm sorry, but I can't help with that request."
LLAMA_SERVER_REFUSAL = 'response_format type must be one of "text" or "json_object", but got: '
LLAMA_CPP_PYTHON_REFUSAL = (  # 0.3.36's 500, measured (its install's path shortened)
    "1 validation error:\n  {'type': 'literal_error', 'loc': ('body', 'response_format', "
    "'type'), 'msg': \"Input should be 'text' or 'json_object'\", 'input': 'json_schema', "
    "'ctx': {'expected': \"'text' or 'json_object'\"}}\n\n  File \"llama_cpp/server/app.py\", "
    "line 376, in create_chat_completion\n    POST /v1/chat/completions"
)
LM_STUDIO_REFUSAL = "'response_format.type' must be 'json_schema' or 'text'"
SERVERS: dict[str, dict[str, Any]] = {
    # owned_by: what GET /v1/models says; takes: the response_format types it accepts
    # (a schema beside json_object constrains the reply where `schema_in_json_object`);
    # the others are refused by `refuse` (status, body).
    "stub": {
        "owned_by": "stub",
        "takes": {"text", "json_object", "json_schema"},
        "schema_in_json_object": True,
    },
    "llama-server": {  # tools/server/server-common.cpp: both, the schema constrains
        "owned_by": "llamacpp",
        "takes": {"text", "json_object", "json_schema"},
        "schema_in_json_object": True,
        "refuse": lambda kind: (
            400,
            {
                "error": {
                    "code": 400,
                    "message": LLAMA_SERVER_REFUSAL + kind,
                    "type": "invalid_request_error",
                }
            },
        ),
    },
    "llama-server-2024": {  # before json_schema was read (and ik_llama.cpp until 2025-09)
        "owned_by": "llamacpp",
        "takes": {"text", "json_object"},
        "schema_in_json_object": True,
        "refuse": lambda kind: (
            500,
            {
                "error": {
                    "code": 500,
                    "message": LLAMA_SERVER_REFUSAL + kind,
                    "type": "server_error",
                }
            },
        ),
    },
    "llama-cpp-python": {  # llama_cpp/server/types.py: type Literal["text", "json_object"]
        "owned_by": "me",
        "takes": {"text", "json_object"},
        "schema_in_json_object": True,
        "refuse": lambda kind: (
            500,
            {
                "error": {
                    "message": LLAMA_CPP_PYTHON_REFUSAL,
                    "type": "internal_server_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
    },
    "ollama": {  # openai/openai.go: json_object is format "json", a schema beside it dropped
        "owned_by": "library",
        "takes": {"text", "json_object", "json_schema"},
    },
    "vllm": {  # ResponseFormat: a schema beside json_object is an ignored extra field
        "owned_by": "vllm",
        "takes": {"text", "json_object", "json_schema"},
    },
    "lmstudio": {  # 400, its error a bare string
        "owned_by": "organization_owner",
        "takes": {"text", "json_schema"},
        "refuse": lambda kind: (400, {"error": LM_STUDIO_REFUSAL}),
    },
}
WIRES = ("chat", "responses", "messages")
_STOP = frozenset(
    re.findall(
        r"\w+",
        "I A An The It We You He She They This That These Those And But Or So If When Then "
        "My Our Your His Her Their Its Yes No Ok Okay Oh Hi Hello Thanks Sure Well Also "
        "What Why How Who Where Which Today Tomorrow Yesterday",
    )
)
_TAG = re.compile(r"<([A-Z][A-Z_ ]*)>\n?(.*?)\n?</\1>", re.S)
_SCHEMA_IN_PROMPT = re.compile(
    r"Respond with a JSON object in the following format:\s*(\{.*\})\s*$", re.S
)


class StubLLM:
    """`with StubLLM() as llm:` serves on `llm.url` (an OpenAI base URL ending in /v1)
    and `llm.anthropic_url` (Anthropic's SDK adds the /v1 itself), on 127.0.0.1 unless
    `host` names another of this machine's addresses (one containers reach)."""

    def __init__(
        self,
        *,
        llama_cpp: bool = False,
        server: str = "stub",
        model: str = "stub-extractor",
        host: str = "127.0.0.1",
    ):
        assert server in SERVERS, server
        self.server = "llama-server-2024" if llama_cpp else server
        """Which server's models listing and response_format handling it has (SERVERS)."""
        self.model = model
        self.slow_s = 1.0
        self.api_key: str | None = None
        """When set, a request with another key (or none) is answered 401, as an API does."""
        self.calls = 0
        self.by_prompt: Counter[str] = Counter()
        self.faults_served: Counter[str] = Counter()
        self.formats: list[str] = []
        self.by_wire: Counter[str] = Counter()
        self.turn_reply = "Noted."
        """What a streamed call (an agent host's turn) is answered."""
        self.turns: list[dict] = []
        """The bodies of the streamed calls, in order."""
        self._script: list[str | None] = []
        self._mode: str | None = None
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer((host, 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def llama_cpp(self) -> bool:
        """A llama.cpp server that takes no json_schema (the form older tests set)."""
        return self.server == "llama-server-2024"

    @llama_cpp.setter
    def llama_cpp(self, on: bool) -> None:
        self.server = "llama-server-2024" if on else "stub"

    @property
    def url(self) -> str:
        return f"{self.anthropic_url}/v1"

    @property
    def anthropic_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # --- control ---

    def fail(self, fault: str, times: int = 1, after: int = 0) -> None:
        """Answer `after` calls normally, then `times` calls with `fault`, then recover."""
        assert fault in FAULTS, fault
        with self._lock:
            self._script += [None] * after + [fault] * times

    def set_mode(self, fault: str | None) -> None:
        """Answer every call with `fault` until set back to None (healthy)."""
        assert fault is None or fault in FAULTS, fault
        with self._lock:
            self._mode = fault
        if fault != "hang":
            self._release.set()
            self._release = threading.Event()

    def reset_counts(self) -> None:
        with self._lock:
            self.calls = 0
            self.by_prompt.clear()
            self.faults_served.clear()
            self.formats.clear()
            self.by_wire.clear()

    def start(self) -> StubLLM:
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> StubLLM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # --- answering ---

    def _next_fault(self) -> str | None:
        with self._lock:
            self.calls += 1
            fault = self._script.pop(0) if self._script else self._mode
            if fault:
                self.faults_served[fault] += 1
            return fault

    def complete(self, request: dict) -> tuple[int, dict]:
        """`POST /v1/chat/completions`: the OpenAI-compatible chat wire."""
        fmt = request.get("response_format") or {}
        self.formats.append(fmt.get("type", "none") + ("+schema" if "schema" in fmt else ""))
        server = SERVERS[self.server]
        if fmt and fmt.get("type") not in server["takes"]:
            with self._lock:
                self.calls += 1
                self.by_wire["chat"] += 1
                self.faults_served["response_format"] += 1
            return server["refuse"](str(fmt.get("type")))
        if fmt.get("type") == "json_object" and not server.get("schema_in_json_object"):
            fmt = {"type": "json_object"}  # what it does with a schema beside json_object
        messages = request.get("messages") or []
        prompt = "\n".join(m.get("content") or "" for m in messages)
        status, content = self._think("chat", _schema(fmt, prompt), prompt)
        if status != 200:
            return status, _openai_error(status, content)
        message = {"role": "assistant", "content": content, "refusal": None}
        if content is None:
            message["refusal"] = REFUSAL
        usage = _tokens(prompt, content)
        return 200, {
            "id": f"chatcmpl-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
            "usage": {
                "prompt_tokens": usage["input_tokens"],
                "completion_tokens": usage["output_tokens"],
                "total_tokens": usage["total_tokens"],
            },
        }

    def respond(self, request: dict) -> tuple[int, dict]:
        """`POST /v1/responses`: OpenAI's Responses API, structured by `text.format`."""
        fmt = (request.get("text") or {}).get("format") or {}
        self.formats.append(fmt.get("type", "none"))
        prompt = "\n".join(
            [request.get("instructions") or ""]
            + [_text(item.get("content")) for item in request.get("input") or []]
        )
        schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
        status, content = self._think("responses", schema, prompt)
        if status != 200:
            return status, _openai_error(status, content)
        if content is None:
            part = {"type": "refusal", "refusal": REFUSAL}
        else:
            part = {"type": "output_text", "text": content, "annotations": [], "logprobs": []}
        return 200, {
            "id": f"resp_{time.monotonic_ns()}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": request.get("model") or self.model,
            "output": [
                {
                    "type": "message",
                    "id": f"msg_{time.monotonic_ns()}",
                    "status": "completed",
                    "role": "assistant",
                    "content": [part],
                }
            ],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "text": request.get("text") or {"format": {"type": "text"}},
            "error": None,
            "incomplete_details": None,
            "usage": {
                **_tokens(prompt, content),
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    def turn(self, wire: str, request: dict) -> list[dict]:
        """A streamed call, as an agent host makes each turn (Codex on the Responses wire,
        Claude Code on the Messages wire): the events of one assistant message,
        `turn_reply`, with no tool call, so the turn ends there."""
        with self._lock:
            self.turns.append(request)
            self.by_wire[wire] += 1
        made, text = f"{time.monotonic_ns()}", self.turn_reply
        usage = _tokens(json.dumps(request.get("input") or request.get("messages")), text)
        if wire == "messages":
            started = {
                "id": f"msg_{made}",
                "type": "message",
                "role": "assistant",
                "model": request.get("model") or self.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": usage["input_tokens"], "output_tokens": 0},
            }
            return [
                {"type": "message_start", "message": started},
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "text", "text": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "text_delta", "text": text},
                },
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
                {"type": "message_stop"},
            ]
        item = {
            "type": "message",
            "id": f"msg_{made}",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": []}],
        }
        usage |= {
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        return [
            {"type": "response.created", "response": {"id": f"resp_{made}"}},
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {"id": f"resp_{made}", "usage": usage}},
        ]

    def message(self, request: dict, api_key: str | None) -> tuple[int, dict]:
        """`POST /v1/messages`: Anthropic's Messages API, the answer forced into a tool."""
        if not api_key:
            return 401, _anthropic_error(401, "an API key is required")
        tools = request.get("tools") or []
        choice = request.get("tool_choice") or {}
        tool = next((t for t in tools if t.get("name") == choice.get("name")), None)
        self.formats.append("tool_use" if tool else "text")
        prompt = "\n".join(
            [_text(request.get("system"))]
            + [_text(m.get("content")) for m in request.get("messages") or []]
        )
        status, content = self._think("messages", tool and tool.get("input_schema"), prompt)
        if status != 200:
            return status, _anthropic_error(status, content)
        details = None
        if content is None:
            # A refusal: the model stops with a few words of its own, not the tool call.
            blocks, stop = [{"type": "text", "text": REFUSAL}], "refusal"
            details = {"type": "refusal", "category": "general_harms", "explanation": REFUSAL}
        elif tool is None or not content.startswith("{"):
            # No tool asked for, or garbage: prose instead of the tool call.
            blocks, stop = [{"type": "text", "text": content}], "end_turn"
        else:
            blocks = [
                {
                    "type": "tool_use",
                    "id": f"toolu_{time.monotonic_ns()}",
                    "name": tool["name"],
                    "input": json.loads(content),
                }
            ]
            stop = "tool_use"
        usage = _tokens(prompt, content)
        return 200, {
            "id": f"msg_{time.monotonic_ns()}",
            "type": "message",
            "role": "assistant",
            "model": request.get("model") or self.model,
            "content": blocks,
            "stop_reason": stop,
            "stop_details": details,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage["input_tokens"],
                "output_tokens": usage["output_tokens"],
            },
        }

    def _think(self, wire: str, schema: dict | None, prompt: str) -> tuple[int, str | None]:
        """What the model says: (200, the JSON text, or None for a refusal), or an error
        (status, message) for the wire to put in its own shape."""
        with self._lock:
            self.by_wire[wire] += 1
        fault = self._next_fault()
        if fault == "hang":
            self._release.wait(600)
            return 503, "released from a hang"
        if fault in ("429", "500", "503", "529", "401"):
            return int(fault), f"stub fault {fault}"
        if fault == "quota":  # out of credit: OpenAI says 429, Anthropic 402
            return (402 if wire == "messages" else 429), "stub fault quota: no credit left"
        if fault == "refusal":
            return 200, None
        if fault == "slow":
            time.sleep(self.slow_s)
        title = (schema or {}).get("title", "none")
        if fault == "garbage":
            return 200, "I'm sorry, as a language model {not json"
        if fault == "wrong_shape":
            return 200, json.dumps({"unexpected": True})
        if fault == "empty":
            return 200, json.dumps(minimal(schema or {}, (schema or {}).get("$defs", {})))
        content = json.dumps(answer(title, schema, prompt))
        with self._lock:
            self.by_prompt[title] += 1
        return 200, content

    def models(self) -> dict:
        owner = SERVERS[self.server]["owned_by"]
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "type": "model", "owned_by": owner}],
            "has_more": False,
        }


def _handler_for(stub: StubLLM):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args) -> None:  # quiet
            pass

        def _reply(self, status: int, body: dict) -> None:
            data = json.dumps(body).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "1")
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout): nothing to answer

        def _stream(self, events: list[dict]) -> None:
            """Server-sent events, then the connection closed (no length to give)."""
            self.close_connection = True
            try:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                for event in events:
                    self.wfile.write(
                        f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()
                    )
                self.wfile.flush()
            except (BrokenPipeError, ConnectionResetError):
                pass

        def _anthropic(self) -> bool:
            return "anthropic-version" in self.headers

        def _key(self) -> str | None:
            """The key, as a bearer token (both SDKs) or in `x-api-key` (Anthropic's)."""
            bearer = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
            return self.headers.get("x-api-key") or bearer or None

        def do_GET(self) -> None:
            if self.path.split("?")[0].rstrip("/") == "/v1/models":
                if stub._mode == "401":
                    errors = _anthropic_error if self._anthropic() else _openai_error
                    self._reply(401, errors(401, "stub fault 401"))
                else:
                    self._reply(200, stub.models())
            else:
                self._reply(404, _openai_error(404, f"no route {self.path}"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            path = self.path.split("?")[0].rstrip("/")
            routes = {
                "/v1/chat/completions": stub.complete,
                "/v1/responses": stub.respond,
                "/v1/messages": lambda r: stub.message(r, self._key()),
            }
            route = routes.get(path)
            errors = _anthropic_error if path == "/v1/messages" else _openai_error
            if route is None:
                self._reply(404, errors(404, f"no route {self.path}"))
                return
            if stub.api_key and self._key() != stub.api_key:
                self._reply(401, errors(401, "invalid x-api-key"))
                return
            try:
                request = json.loads(raw)
            except json.JSONDecodeError:
                self._reply(400, errors(400, "request body is not JSON"))
                return
            if request.get("stream") is True and path in ("/v1/responses", "/v1/messages"):
                self._stream(stub.turn(path.rsplit("/", 1)[1], request))
                return
            self._reply(*route(request))

    return Handler


_OPENAI_ERRORS = {  # status: (type, code), as OpenAI's API names them
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
    500: ("server_error", None),
    503: ("server_error", "service_unavailable"),
}
_ANTHROPIC_ERRORS = {  # status: error type, as Anthropic's API names them
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    503: "api_error",
    529: "overloaded_error",
}


def _openai_error(status: int, message: str) -> dict:
    kind, code = _OPENAI_ERRORS.get(status, ("server_error", None))
    if "no credit" in message:
        kind = code = "insufficient_quota"
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def _anthropic_error(status: int, message: str) -> dict:
    kind = _ANTHROPIC_ERRORS.get(status, "api_error")
    return {
        "type": "error",
        "error": {"type": kind, "message": message},
        "request_id": f"req_{time.monotonic_ns()}",
    }


def _text(content: Any) -> str:
    """A message's text, whether a string or a list of content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(part.get("text")) for part in content if isinstance(part, dict))
    return ""


def _tokens(prompt: str, content: str | None) -> dict:
    used = {"input_tokens": len(prompt) // 4, "output_tokens": len(content or REFUSAL) // 4}
    return used | {"total_tokens": used["input_tokens"] + used["output_tokens"]}


def _schema(fmt: dict, prompt: str) -> dict | None:
    if fmt.get("type") == "json_schema":
        return (fmt.get("json_schema") or {}).get("schema")
    if "schema" in fmt:
        return fmt["schema"]
    found = _SCHEMA_IN_PROMPT.search(prompt)
    return json.loads(found[1]) if found else None


# --- the "model": valid answers for each Graphiti response model ---


def answer(title: str, schema: dict | None, prompt: str) -> Any:
    tags = {name: body for name, body in _TAG.findall(prompt)}
    current = tags.get("CURRENT MESSAGE") or tags.get("CURRENT_MESSAGE") or tags.get("TEXT") or ""
    if title == "ExtractedEntities":
        return {
            "extracted_entities": [
                {"name": name, "entity_type_id": 0, "episode_indices": [0]}
                for name in entity_names(current)
            ]
        }
    if title == "NodeResolutions":
        extracted = _json(tags.get("ENTITIES"), [])
        existing = _json(tags.get("EXISTING ENTITIES"), [])
        by_name = {str(e.get("name", "")).lower(): e.get("candidate_id", -1) for e in existing}
        return {
            "entity_resolutions": [
                {
                    "id": e.get("id", i),
                    "name": e.get("name", ""),
                    "duplicate_candidate_id": by_name.get(str(e.get("name", "")).lower(), -1),
                }
                for i, e in enumerate(extracted)
            ]
        }
    if title == "ExtractedEdges":
        names = [e.get("name", "") for e in _json(tags.get("ENTITIES"), []) if isinstance(e, dict)]
        return {"edges": list(_edges(current, names))}
    if title == "EdgeDuplicate":
        new = _json(tags.get("NEW FACT"), {})
        new_fact = new.get("fact") if isinstance(new, dict) else str(new)
        existing = _json(tags.get("EXISTING FACTS"), [])
        same = [f.get("idx") for f in existing if isinstance(f, dict) and f.get("fact") == new_fact]
        return {"duplicate_facts": [i for i in same if i is not None], "contradicted_facts": []}
    if title == "SummarizedEntities":
        return {"summaries": []}
    if title == "MessageSummary":
        turns = (tags.get("TURNS") or "").splitlines()
        return {"summary": f"Summary of {len(turns)} turns: " + " / ".join(turns)}
    return minimal(schema or {}, (schema or {}).get("$defs", {}))


def entity_names(text: str) -> list[str]:
    """Capitalised words, each once, in order of appearance."""
    words = re.findall(r"\b[A-Z][a-zA-Z]+\b", text)
    return list(dict.fromkeys(w for w in words if w not in _STOP))


def _edges(text: str, names: list[str]) -> Iterator[dict]:
    seen = set()
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", text):
        present = [n for n in names if n and re.search(rf"\b{re.escape(n)}\b", sentence)]
        for source, target in itertools.pairwise(present):
            fact = sentence.strip()
            if (source, target, fact) in seen:
                continue
            seen.add((source, target, fact))
            yield {
                "source_entity_name": source,
                "target_entity_name": target,
                "relation_type": "MENTIONED_WITH",
                "fact": fact,
                "valid_at": None,
                "invalid_at": None,
                "episode_indices": [0],
            }


def minimal(schema: dict, defs: dict) -> Any:
    """The smallest value valid for a JSON schema (required fields only)."""
    if "$ref" in schema:
        return minimal(defs[schema["$ref"].split("/")[-1]], defs)
    if "anyOf" in schema:
        options = schema["anyOf"]
        if any(o.get("type") == "null" for o in options):
            return None
        return minimal(options[0], defs)
    kind = schema.get("type")
    if kind == "object" or "properties" in schema:
        props = schema.get("properties", {})
        return {name: minimal(props[name], defs) for name in schema.get("required", [])}
    return {"array": [], "string": "", "integer": 0, "number": 0, "boolean": False}.get(kind)


def _json(text: str | None, default: Any) -> Any:
    if not text:
        return default
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return default
