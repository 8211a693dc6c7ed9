# Meeting Delegate service: `docker build -t meeting-delegate .`
# Run (tokens are required: the server refuses to listen beyond loopback without them):
#   docker run -p 8000:8000 -e DELEGATE_API_TOKENS=change-me -v delegate-data:/data meeting-delegate
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DELEGATE_DB_PATH=/data/delegate-audit.sqlite \
    DELEGATE_PORT=8000

WORKDIR /app
COPY pyproject.toml README.md ./
COPY delegate ./delegate
COPY benchmark ./benchmark
COPY prompts ./prompts
# Editable, so that `prompts/` stays next to the package where delegate.prompts looks for it.
RUN pip install -e . \
    && useradd --system --uid 10001 --home-dir /app delegate \
    && mkdir -p /data \
    && chown delegate /data

USER delegate
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('DELEGATE_PORT', '8000'), timeout=4)"]

CMD ["python", "-m", "delegate", "serve", "--host", "0.0.0.0"]
