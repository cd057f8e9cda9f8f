"""What a running server does in the background, started and stopped with the app:
the queue's workers (one registration per job kind) and the services each layer needs.
Reading this file tells what runs besides the request handlers."""

from __future__ import annotations

from engine import queue
from engine.config import Settings
from engine.db import Database


class Runtime:
    def __init__(self, settings: Settings, db: Database):
        self.settings = settings
        self.db = db
        self.workers = queue.Workers(db, queue.Policy.from_settings(settings))

    def start(self) -> None:
        queue.resume(self.db)
        self.workers.start()

    def stop(self) -> None:
        self.workers.stop()
