# RAWP in one image: `rawp master` (the default), `rawp gateway` or `rawp up`, chosen by command.
# The README's "With Docker" steps, which tests/docker/test_docker_image.py runs:
#
#   docker build -t rawp .
#   docker network create rawp      # a user-defined network: `rawp-master` resolves on it
#   cp .env.example .env            # then set RAWP_EDGE_SECRET and the DISCORD_* or SLACK_* lines
#   docker run -d --name rawp-master --network rawp --restart unless-stopped \
#     -p 127.0.0.1:8700:8700 -v rawp-master:/data --env-file .env \
#     -e RAWP_MASTER_PUBLIC_URL=https://rawp.example.com rawp
#   docker run -d --name rawp-gateway --network rawp --restart unless-stopped \
#     -v rawp-gateway:/data --env-file .env -e RAWP_MASTER_URL=http://rawp-master:8700 \
#     -e RAWP_HEALTHCHECK_URL=http://rawp-master:8700/v1/health rawp gateway
#   printf 'hello\n' | docker run -i --rm rawp up    # `up` reads its prompts from stdin: -i
#
# compose.yaml runs master and gateway with PostgreSQL and Redis. Slim, non-root (uid 10001),
# state under the /data volume. The healthcheck asks the master's HTTP API at the container's
# own address, not at loopback, so a master that listens on 127.0.0.1 only (unreachable through
# -p) is unhealthy; any answer below 500 means it is serving. RAWP_HEALTHCHECK_URL points it
# elsewhere: a gateway container at its master.

# The dependencies in a stage of their own, keyed on pyproject.toml alone: a change to the
# sources reuses it and rebuilds in seconds instead of installing every dependency again.
FROM python:3.11-slim AS deps
WORKDIR /src
COPY pyproject.toml ./
RUN python -m venv /opt/rawp \
    && /opt/rawp/bin/python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > requirements.txt \
    && /opt/rawp/bin/pip install --no-cache-dir --disable-pip-version-check -r requirements.txt 'setuptools>=69'

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
COPY --from=deps /opt/rawp /opt/rawp
COPY pyproject.toml README.md /tmp/rawp/
COPY rawp /tmp/rawp/rawp
COPY runtime /tmp/rawp/runtime
COPY master /tmp/rawp/master
COPY client /tmp/rawp/client
COPY gateway /tmp/rawp/gateway
COPY adapters /tmp/rawp/adapters
COPY rawp_app /tmp/rawp/rawp_app
# pip compiles the bytecode as it installs (the non-root user could not write it at run time:
# every start would compile every module again, doubling a cold master's time to listen).
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation \
        /tmp/rawp \
    && rm -rf /tmp/rawp
USER rawp
WORKDIR /data
VOLUME ["/data"]
EXPOSE 8700
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["python", "-c", "import os, socket, urllib.request as r, urllib.error as e\nport = os.environ.get('RAWP_MASTER_PORT', '8700')\ntry:\n    host = socket.gethostbyname(socket.gethostname())\nexcept OSError:\n    host = '127.0.0.1'\nurl = os.environ.get('RAWP_HEALTHCHECK_URL') or f'http://{host}:{port}/v1/health'\ntry:\n    r.urlopen(url, timeout=4)\nexcept e.HTTPError as answer:\n    raise SystemExit(answer.code >= 500)\nexcept OSError:\n    raise SystemExit(1)"]
ENTRYPOINT ["rawp"]
CMD ["master"]
