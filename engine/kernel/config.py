"""Settings, read from the environment and two `.env` files (pydantic-settings).

`ClientSettings` are what a client reads (a hook, the spool, the MCP relay, an importer:
the service's address, the token, the client's folder, the hook's budget and limits);
`Settings`, the server's, are those and the rest. Both read, the later winning: a
container's secret files (SECRETS_DIR), the user's config folder's `.env`, the data dir's
`.env`, the environment (where an empty value is not set); never a `.env` in
the current folder (a hook runs inside any project). Every setting is listed with a
comment in `.env.example`. Command-line flags (`--data-dir`, `--port`, ...) override them
all.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Literal

from dotenv import dotenv_values
from pydantic import AliasChoices, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from engine.kernel.net import is_loopback


def default_folder(setting: str) -> Path:
    """Where `data_dir` or `client_dir` is when not set: the user's data folder
    (`$XDG_DATA_HOME/pps`, else `~/.local/share/pps`) or state folder (`$XDG_STATE_HOME/pps`,
    else `~/.local/state/pps`); platformdirs' equivalents on macOS and Windows."""
    import platformdirs

    if setting == "data_dir":
        return platformdirs.user_data_path("pps")
    return platformdirs.user_state_path("pps")


SECRETS_DIR = Path("/run/secrets")
"""Where a container gets its secrets as files (compose.yaml's `secrets:`), each named as its
variable (`/run/secrets/NEO4J_PASSWORD`): read after the environment and the `.env` files."""


def config_env_file() -> Path:
    """The user's own `.env`: `$XDG_CONFIG_HOME/pps/.env`, else `~/.config/pps/.env`
    (platformdirs' config folder on macOS and Windows)."""
    import platformdirs

    return platformdirs.user_config_path("pps") / ".env"


def _named_data_dir() -> str | None:
    """PPS_DATA_DIR as the environment gives it, else as the config folder's `.env` does;
    None when neither does (blank is not given). Not the data dir's own `.env`: it is
    found by this."""
    for name, value in os.environ.items():
        if name.upper() == "PPS_DATA_DIR" and value.strip():
            return value
    given = dotenv_values(config_env_file()).get("PPS_DATA_DIR")
    return given if given and given.strip() else None


def env_files(data_dir: Path | str | None = None) -> tuple[Path, Path]:
    """The `.env` files settings are read from, the second winning over the first: the
    config folder's and `<data dir>/.env`, for the data dir given, else the one named
    (`_named_data_dir`), else the default one."""
    chosen = data_dir or _named_data_dir()
    folder = _user_folder(chosen, "data_dir")
    return config_env_file(), folder / ".env"


def _user_folder(value: Any, setting: str) -> Path:
    """Unset (or blank): the user's own folder, whatever the current folder is; a path
    given is made absolute (against the current folder), `~` expanded."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default_folder(setting)
    return Path(value).expanduser().absolute()


class ClientSettings(BaseSettings):
    """What the clients read (`ingest/`): where the service is, which entity they are,
    where they keep their state, and a hook's budget and limits."""

    # An empty value (`LLM_MODEL=`, as .env.example writes it) is not set: the next
    # source, else the default, gives the setting.
    model_config = SettingsConfigDict(
        env_prefix="PPS_", env_ignore_empty=True, extra="ignore", populate_by_name=True
    )

    port: int = Field(8000, ge=1, le=65535, description="Port the server listens on.")
    max_content_bytes: int = Field(256 * 1024, ge=1, description="Largest event content (UTF-8).")
    url: str | None = Field(
        None,
        description="The service the clients (hooks, daemons, importers) send to; "
        "default http://127.0.0.1:<PPS_PORT>.",
    )
    token: SecretStr | None = Field(
        None,
        description="The entity token the clients send when PPS_TOKEN_FILE is unset (prefer it).",
    )
    token_file: Path | None = Field(
        None,
        description="A 0600 file holding the entity token; it wins over PPS_TOKEN.",
    )
    client_dir: Path = Field(
        None,
        validate_default=True,
        description="Where clients keep their spool, the transcript positions of hooks and "
        "hooks.log; unset: the user's state folder ($XDG_STATE_HOME/pps, else "
        "~/.local/state/pps).",
    )
    spool_path: Path | None = Field(
        None,
        description="The spool file (default: one per service and token under PPS_CLIENT_DIR).",
    )
    client_timeout_s: float = Field(
        30.0, gt=0, description="Longest wait for one request from an importer or a flush."
    )
    client_batch: int = Field(
        500, ge=1, description="Events per request when the client sends the spool."
    )
    hook_budget_s: float = Field(
        2.0, gt=0, description="A hook returns within this many seconds, whatever happens."
    )
    hook_max_chars: int = Field(
        10_000,
        ge=1_000,
        le=1_000_000,
        description="Most characters a hook injects; recall fills them most important first"
        " and says what it left out.",
    )

    def __init__(self, **values: Any) -> None:
        """`_env_file` (pydantic-settings') replaces the two `.env` files; None reads none
        (nor SECRETS_DIR)."""
        if "_env_file" not in values:
            values["_env_file"] = env_files(values.get("data_dir"))
            if SECRETS_DIR.is_dir():
                values["_secrets_dir"] = SECRETS_DIR
        super().__init__(**values)

    @field_validator("client_dir", mode="before")
    @classmethod
    def _client_folder(cls, value: Any) -> Path:
        return _user_folder(value, "client_dir")


class Settings(ClientSettings):
    """The server's settings: the clients' and everything the service itself reads."""

    data_dir: Path = Field(
        None,
        validate_default=True,
        description="Where the database and entity homes live; unset: the user's data folder "
        "($XDG_DATA_HOME/pps, else ~/.local/share/pps).",
    )
    host: str = Field("127.0.0.1", description="Address the server binds.")
    allow_remote: bool = Field(False, description="Allow binding a non-loopback address.")

    max_batch: int = Field(1000, ge=1, description="Most events accepted in one request.")
    max_request_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest request body the server reads."
    )

    busy_timeout_ms: int = Field(10_000, ge=0, description="How long SQLite waits on a lock.")
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        "FULL",
        description="FULL survives power loss; NORMAL survives a killed process only.",
    )

    # --- queue (engine.store.queue): durable jobs that feed the derived layers ---
    queue_lease_s: float = Field(
        60.0, gt=0, description="A claimed job is claimed again if its worker is silent this long."
    )
    queue_max_attempts: int = Field(8, ge=1, description="Attempts before a job is dead.")
    queue_backoff_initial_s: float = Field(2.0, gt=0, description="First retry delay.")
    queue_backoff_max_s: float = Field(600.0, gt=0, description="Longest retry delay.")
    queue_poll_s: float = Field(0.5, gt=0, description="How often idle workers look for jobs.")

    # --- recall (ambient_recall across the layers) ---
    recall_budget_ms: float = Field(
        1000.0, gt=0, description="Time each local layer gets in ambient_recall."
    )
    recall_graph_budget_ms: float = Field(
        300.0, gt=0, description="Time the graph layer gets in ambient_recall."
    )
    recall_rerank: int = Field(
        10,
        ge=0,
        le=100,
        description="An ambient recall's first turn candidates the reranker reads with the"
        " context, to choose the turns it injects (0: off).",
    )
    recall_rerank_budget_ms: float = Field(
        30.0,
        gt=0,
        description="Time the reranker gets in an ambient recall: it reads as many of those"
        " candidates as it can in it.",
    )
    recall_min_similarity: float | None = Field(
        None,
        ge=0,
        le=1,
        description="An ambient recall injects turns (and file excerpts) only when one it found"
        " is at least this similar to the context by meaning (cosine), is read by the reranker"
        " as bearing on it, or holds an identifier of it: nothing rather than noise (0: off;"
        " unset: the embedding model's own, 0.3 for MiniLM, 0.55 for bge).",
    )
    recall_startup_budget_ms: float = Field(
        2000.0, gt=0, description="Time each layer gets in startup recall."
    )
    recall_log: bool = Field(
        True, description="Log every recall (sources, scores, latency, what the reply used)."
    )
    recall_log_days: int = Field(
        90, ge=0, description="Recall log entries kept this many days (0: no limit)."
    )
    recall_log_rows: int = Field(
        10_000, ge=0, description="... and at most this many per entity (0: no limit)."
    )

    # --- crystals (layer 4) ---
    crystal_keep: int = Field(8, ge=1, description="Crystals kept current; older ones archived.")

    # --- search (layer 2 and the longform tier) ---
    embedding_model: str = Field(
        "all-MiniLM-L6-v2-onnx-int8",
        validation_alias=AliasChoices("EMBEDDING_MODEL", "PPS_EMBEDDING_MODEL"),
        description="The bundled offline MiniLM, or any fastembed model name (downloads it).",
    )
    embedding_batch_size: int = Field(32, ge=1, le=1024, description="Texts per model call.")
    entity_homes: dict[str, Path] = Field(
        default_factory=dict,
        description="Entities whose home is an existing folder (JSON: name -> path); "
        "the others live in <data dir>/entities/<name>.",
    )
    domain_collections: list[str] = Field(
        ["documents"], description="Folders in each home searched as the domain tier."
    )
    growth_collections: list[str] = Field(
        ["growth"], description="Domain folders searched only when a search asks for growth."
    )
    fragment_categories: list[str] = Field(
        [], description="The categories store accepts; empty: any lowercase name."
    )
    search_fusion: Literal["weighted", "rrf"] = Field(
        "weighted", description="How dense and BM25 rankings combine (measured in bench/locomo)."
    )
    search_bm25_weight: float = Field(
        0.5, ge=0, le=1, description="BM25's share of a weighted score; dense gets the rest."
    )
    search_turn_context: int = Field(
        2, ge=0, le=10, description="Neighbouring turns each side whose words also rank a turn."
    )
    search_rerank: int = Field(
        30,
        ge=0,
        le=100,
        description="A search's first candidates the reranker reads with the query, to"
        " reorder them. 0: off.",
    )
    search_rerank_budget_ms: float = Field(
        1000.0,
        gt=0,
        description="Time the reranker gets in a search: it reads as many of the first"
        " candidates, best first, as it can in it.",
    )
    search_ann_min_rows: int = Field(
        50_000,
        ge=0,
        description="Vectors of one entity past which an approximate index serves search"
        " (built in the background; exact until then). 0: always exact.",
    )
    search_max_text_bytes: int = Field(
        64 * 1024, ge=256, description="Largest fragment or anchor text (UTF-8)."
    )
    search_max_file_bytes: int = Field(
        10_000_000,
        ge=1024,
        description="Largest file of a home that is indexed; a larger one is skipped and"
        " reported (resync, GET /v1/search/index, /health, pps doctor).",
    )
    chunk_max_chars: int = Field(
        1500,
        ge=200,
        le=20_000,
        description="Longest chunk in characters (a chunk also fits the embedding model's"
        " length); longer sections split at words.",
    )
    search_watch: bool = Field(True, description="Follow file changes in the homes while running.")
    search_rescan_s: float = Field(
        300.0, gt=0, description="Full check of the homes against the index, in seconds."
    )

    # --- graph (layer 3) ---
    graph_backend: Literal["falkordb", "neo4j", "none"] = Field(
        "falkordb",
        validation_alias=AliasChoices("GRAPH_BACKEND", "PPS_GRAPH_BACKEND"),
        description="falkordb: embedded (or external with GRAPH_URL); neo4j: GRAPH_URL; none: off.",
    )
    graph_url: str | None = Field(
        None,
        validation_alias=AliasChoices("GRAPH_URL", "PPS_GRAPH_URL"),
        description="External graph: redis://host:port (FalkorDB) or neo4j://user:pass@host:7687.",
    )
    neo4j_user: str = Field(
        "neo4j",
        validation_alias=AliasChoices("NEO4J_USER", "PPS_NEO4J_USER"),
        description="Neo4j user when GRAPH_URL carries none.",
    )
    neo4j_password: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("NEO4J_PASSWORD", "PPS_NEO4J_PASSWORD"),
        description="Neo4j password when GRAPH_URL carries none.",
    )
    llm_provider: Literal["none", "openai", "anthropic", "openai_compatible"] = Field(
        "none",
        validation_alias=AliasChoices("LLM_PROVIDER", "PPS_LLM_PROVIDER"),
        description="The extraction LLM; none: graph jobs wait, everything else works.",
    )
    llm_base_url: str | None = Field(
        None,
        validation_alias=AliasChoices("LLM_BASE_URL", "PPS_LLM_BASE_URL"),
        description="Base URL of an OpenAI-compatible server (Ollama, vLLM, llama.cpp).",
    )
    llm_model: str | None = Field(
        None,
        validation_alias=AliasChoices("LLM_MODEL", "PPS_LLM_MODEL"),
        description="Model for extraction.",
    )
    llm_small_model: str | None = Field(
        None,
        validation_alias=AliasChoices("LLM_SMALL_MODEL", "PPS_LLM_SMALL_MODEL"),
        description="Model for the simpler prompts (default: LLM_MODEL).",
    )
    llm_api_key: SecretStr | None = Field(
        None,
        validation_alias=AliasChoices("LLM_API_KEY", "PPS_LLM_API_KEY"),
        description="API key for the LLM provider.",
    )
    llm_response_format: Literal["auto", "json_schema", "json_object", "json_object_schema"] = (
        Field(
            "auto",
            description="Structured output for openai_compatible; auto: what the endpoint"
            " was found to speak (a refusal naming the accepted types switches it, remembered"
            " per base URL), json_object with the schema inside for llama.cpp's server.",
        )
    )
    llm_timeout_s: float = Field(120.0, gt=0, description="Longest wait for one LLM reply.")
    graph_episode_max_turns: int = Field(
        20, ge=1, description="Most turns in one episode (one add_episode is 4-9 LLM calls)."
    )
    graph_episode_max_chars: int = Field(
        12_000, ge=200, description="Most characters in one episode; longer turns are cut."
    )
    graph_episode_idle_s: float = Field(
        600.0, gt=0, description="A session quiet this long closes its episode."
    )
    summarize_after: int = Field(
        100,
        ge=0,
        le=1_000_000,
        description="Unsummarized turns past which an entity's oldest turns are summarized by"
        " themselves (with an LLM; recall warns without one); 0: only when asked.",
    )
    summarize_check_s: float = Field(
        60.0, gt=0, description="How often the unsummarized turns are counted, in seconds."
    )
    graph_sweep_s: float = Field(
        1.0, gt=0, description="How often finished session windows are looked for."
    )
    graph_concurrency: int = Field(2, ge=1, description="Episodes being extracted at once.")
    graph_llm_parallel: int = Field(
        4, ge=1, description="Most LLM calls one episode makes at the same time."
    )
    graph_daily_calls: int = Field(
        0, ge=0, description="LLM calls per entity per UTC day; 0: no limit."
    )
    graph_daily_tokens: int = Field(
        0, ge=0, description="LLM tokens per entity per UTC day; 0: no limit."
    )
    graph_duplicate_similarity: float = Field(
        0.95,
        ge=0,
        le=1,
        description="Cosine of two entity names' embeddings at or above which the graph"
        " curator takes them for one thing (besides equal normalized names); 0: names only.",
    )
    graph_curate_s: float = Field(
        0.0,
        ge=0,
        description="Merge every entity's duplicate graph nodes this often, in seconds;"
        " 0 (default): only when asked (`pps graph merge`).",
    )
    graph_replay_on_empty: bool = Field(
        False, description="At start, replay the log into an empty graph (else only report it)."
    )

    def __init__(self, **values: Any) -> None:
        """The data dir named by the environment or the config folder's `.env` is the one
        whose `.env` is read; that `.env` cannot name another."""
        if "_env_file" not in values and "data_dir" not in values:
            values["data_dir"] = _named_data_dir()
        super().__init__(**values)

    @field_validator("data_dir", mode="before")
    @classmethod
    def _data_folder(cls, value: Any) -> Path:
        return _user_folder(value, "data_dir")

    @property
    def database_path(self) -> Path:
        return self.data_dir / "pps.sqlite3"

    @property
    def binds_loopback(self) -> bool:
        return is_loopback(self.host)


def settings_env(**fields: Any) -> dict[str, str]:
    """Settings fields as the environment variables that set them (for child processes,
    the `pps` command and benches): `graph_backend` is GRAPH_BACKEND, `queue_lease_s` is
    PPS_QUEUE_LEASE_S (engine/kernel/config.py names the ones without the prefix)."""
    env = {}
    for name, value in fields.items():
        alias = Settings.model_fields[name].validation_alias
        key = str(alias.choices[0]) if isinstance(alias, AliasChoices) else f"PPS_{name.upper()}"
        if value is None:
            env[key] = ""
        elif isinstance(value, bool):
            env[key] = "true" if value else "false"
        elif isinstance(value, list | dict):
            env[key] = json.dumps(value)
        else:
            env[key] = str(value)
    return env
