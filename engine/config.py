"""Settings, read from the environment and `.env` (pydantic-settings).

Every setting is listed with a comment in `.env.example`. Command-line flags
(`--data-dir`, `--port`, ...) override the environment.
"""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="PPS_", env_file=".env", extra="ignore", populate_by_name=True
    )

    data_dir: Path = Field(Path("data"), description="Where the database and entity homes live.")
    host: str = Field("127.0.0.1", description="Address the server binds.")
    port: int = Field(8000, ge=1, le=65535, description="Port the server listens on.")
    allow_remote: bool = Field(False, description="Allow binding a non-loopback address.")

    max_batch: int = Field(1000, ge=1, description="Most events accepted in one request.")
    max_content_bytes: int = Field(256 * 1024, ge=1, description="Largest event content (UTF-8).")
    max_request_bytes: int = Field(
        32 * 1024 * 1024, ge=1024, description="Largest request body the server reads."
    )

    busy_timeout_ms: int = Field(10_000, ge=0, description="How long SQLite waits on a lock.")
    sqlite_synchronous: Literal["FULL", "NORMAL"] = Field(
        "FULL",
        description="FULL survives power loss; NORMAL survives a killed process only.",
    )

    # --- queue (engine.queue): durable jobs that feed the derived layers ---
    queue_lease_s: float = Field(
        60.0, gt=0, description="A claimed job is claimed again if its worker is silent this long."
    )
    queue_max_attempts: int = Field(8, ge=1, description="Attempts before a job is dead.")
    queue_backoff_initial_s: float = Field(2.0, gt=0, description="First retry delay.")
    queue_backoff_max_s: float = Field(600.0, gt=0, description="Longest retry delay.")
    queue_poll_s: float = Field(0.5, gt=0, description="How often idle workers look for jobs.")

    # --- search (layer 2 and the longform tier) ---

    # --- graph (layer 3) ---

    @property
    def database_path(self) -> Path:
        return self.data_dir / "pps.sqlite3"

    @property
    def binds_loopback(self) -> bool:
        return is_loopback(self.host)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
