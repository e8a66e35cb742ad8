# RAWP in one image: `rawp master` (the default), `rawp gateway` or `rawp up`, chosen by command.
#
#   docker build -t rawp .
#   docker run -d --name rawp-master -p 8700:8700 -v rawp-data:/data \
#     -e RAWP_EDGE_SECRET=... -e RAWP_MASTER_PUBLIC_URL=https://rawp.example.com rawp
#   docker run -d --name rawp-gateway -v rawp-data:/data --env-file .env \
#     -e RAWP_MASTER_URL=http://rawp-master:8700 rawp gateway
#
# Slim, non-root (uid 10001), state under the /data volume. The healthcheck asks the master's
# HTTP API (any answer below 500 means it is serving; RAWP_HEALTHCHECK_URL points it elsewhere,
# e.g. a gateway container at its master).

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY rawp ./rawp
COPY master ./master
COPY client ./client
COPY gateway ./gateway
COPY adapters ./adapters
RUN python -m venv /opt/rawp \
    && /opt/rawp/bin/pip install --no-cache-dir --disable-pip-version-check . \
    && find /opt/rawp -name '__pycache__' -prune -exec rm -rf {} +

FROM python:3.11-slim
ENV PATH=/opt/rawp/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    RAWP_MASTER_HOST=0.0.0.0 \
    RAWP_MASTER_PORT=8700 \
    RAWP_MASTER_STATE_DIR=/data/master \
    RAWP_GATEWAY_STATE_DIR=/data/gateway \
    RAWP_STATE_DIR=/data/up \
    RAWP_UP_MASTER_PORT=8700
RUN useradd --system --uid 10001 --home-dir /data --create-home --shell /usr/sbin/nologin rawp
COPY --from=build /opt/rawp /opt/rawp
USER rawp
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8700
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request as r, urllib.error as e\nport = os.environ.get('RAWP_MASTER_PORT', '8700')\nurl = os.environ.get('RAWP_HEALTHCHECK_URL') or f'http://127.0.0.1:{port}/v1/health'\ntry:\n    r.urlopen(url, timeout=4)\nexcept e.HTTPError as answer:\n    raise SystemExit(answer.code >= 500)\nexcept OSError:\n    raise SystemExit(1)"]
ENTRYPOINT ["rawp"]
CMD ["master"]
