"""A stand-in extraction LLM behind the real OpenAI-compatible wire (HTTP on 127.0.0.1).

The only stand-in the tests allow. It answers each Graphiti prompt with JSON that is
valid for that prompt's response model (named in `response_format`, or, in json_object
mode, by the schema Graphiti appends to the prompt): entities are the capitalised words
of the current message, facts join the entities that share a sentence, and a duplicate
is an exact name (or fact) match; a summary (summarize_messages) repeats the turns it was
given. It can be told to answer 429, 500, 401, hang, garbage, a wrong shape, an empty
answer (the schema's smallest value), or slowly (`slow_s`, then normally), for the next N
calls or until told otherwise, and it counts calls.
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

FAULTS = ("429", "500", "401", "hang", "garbage", "wrong_shape", "empty", "slow")
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
    """`with StubLLM() as llm:` serves on `llm.url` (an OpenAI base URL ending in /v1)."""

    def __init__(self, *, llama_cpp: bool = False, model: str = "stub-extractor"):
        self.llama_cpp = llama_cpp
        self.model = model
        self.slow_s = 1.0
        self.calls = 0
        self.by_prompt: Counter[str] = Counter()
        self.faults_served: Counter[str] = Counter()
        self.formats: list[str] = []
        self._script: list[str | None] = []
        self._mode: str | None = None
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._server.daemon_threads = True
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

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
        fmt = request.get("response_format") or {}
        self.formats.append(fmt.get("type", "none") + ("+schema" if "schema" in fmt else ""))
        if self.llama_cpp and fmt.get("type") == "json_schema":
            return 400, _error("response_format type json_schema is not supported", 400)
        fault = self._next_fault()
        if fault == "hang":
            self._release.wait(600)
            return 503, _error("released from a hang", 503)
        if fault in ("429", "500", "401"):
            return int(fault), _error(f"stub fault {fault}", int(fault))
        if fault == "slow":
            time.sleep(self.slow_s)
        messages = request.get("messages") or []
        prompt = "\n".join(m.get("content") or "" for m in messages)
        schema = _schema(fmt, prompt)
        title = (schema or {}).get("title", "none")
        if fault == "garbage":
            content = "I'm sorry, as a language model {not json"
        elif fault == "wrong_shape":
            content = json.dumps({"unexpected": True})
        elif fault == "empty":
            content = json.dumps(minimal(schema or {}, (schema or {}).get("$defs", {})))
        else:
            content = json.dumps(answer(title, schema, prompt))
            with self._lock:
                self.by_prompt[title] += 1
        usage = {"prompt_tokens": len(prompt) // 4, "completion_tokens": len(content) // 4}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return 200, {
            "id": f"stub-{time.monotonic_ns()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": request.get("model") or self.model,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": usage,
        }

    def models(self) -> dict:
        owner = "llamacpp" if self.llama_cpp else "stub"
        return {
            "object": "list",
            "data": [{"id": self.model, "object": "model", "owned_by": owner}],
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
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout): nothing to answer

        def do_GET(self) -> None:
            if self.path.rstrip("/").endswith("/models"):
                if stub._mode == "401":
                    self._reply(401, _error("stub fault 401", 401))
                else:
                    self._reply(200, stub.models())
            else:
                self._reply(404, _error(f"no route {self.path}", 404))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.rstrip("/").endswith("/chat/completions"):
                self._reply(404, _error(f"no route {self.path}", 404))
                return
            try:
                request = json.loads(raw)
            except json.JSONDecodeError:
                self._reply(400, _error("request body is not JSON", 400))
                return
            self._reply(*stub.complete(request))

    return Handler


def _error(message: str, status: int) -> dict:
    return {"error": {"message": message, "type": "stub_error", "code": status}}


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
