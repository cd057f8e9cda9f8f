"""`pps export` and `pps import export` at size: peak RSS of each process, its time, and
the export's size, for an entity of N events (beside a second, smaller one) with a home
of some files.

Run: .venv/bin/python bench/export.py [--sizes 10000,100000] [--files 200] [--dir D]

Each size gets a fresh data dir filled as bench/backup.py fills it (events written
straight into SQLite, N for `lyra` and N/10 for `nova`, `--files` markdown files of
~2 KB in each home). Then, each as its own process: an export of lyra, the same export
again over the first (nothing changed: the same bytes), an import into a fresh data dir
(every line checked, then every event through capture with its search row and queued
job), and the same import again (everything already there). The embedding model is
switched off (EMBEDDING_MODEL names none): the turns' vectors are the queue's work after
an import, not the import's, and the files' would measure the model. Peak RSS is the
process's own ru_maxrss (bench/backup.py's wrapper).

Prints one table row per step; asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

from rich.console import Console
from rich.table import Table

from bench.backup import _mb, fill, run

NO_MODEL = {"EMBEDDING_MODEL": "no-such-org/no-such-model"}


def _folder_mb(folder: Path) -> str:
    return f"{sum(p.stat().st_size for p in folder.rglob('*') if p.is_file()) / 1e6:.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--dir", type=Path, default=None)
    options = parser.parse_args()
    table = Table(title="pps export / import export: peak RSS, time, export size")
    for column in ("events (lyra + nova)", "step", "peak RSS MB", "seconds", "export MB"):
        table.add_column(column, justify="right" if column != "step" else "left")
    console = Console(width=120)
    with tempfile.TemporaryDirectory(dir=options.dir) as scratch:
        root = Path(scratch)
        for size in [int(s) for s in options.sizes.split(",")]:
            data, out = root / f"data-{size}", root / f"export-{size}"
            started = time.perf_counter()
            fill(data, size, options.files)
            label = f"{size} + {size // 10}"
            console.print(f"{label}: filled in {time.perf_counter() - started:.1f} s")
            for step in ("export", "export again (unchanged)"):
                result = run("export", "--entity", "lyra", str(out), "--data-dir", str(data))
                table.add_row(label, step, _mb(result), f"{result['seconds']:.1f}", _folder_mb(out))
            target = root / f"imported-{size}"
            for step in ("import export (fresh data dir)", "import export again (all known)"):
                result = run("import", "export", str(out), "--data-dir", str(target), env=NO_MODEL)
                table.add_row(label, step, _mb(result), f"{result['seconds']:.1f}", "")
    console.print(table)


if __name__ == "__main__":
    main()
