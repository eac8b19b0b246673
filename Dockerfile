# Three images from one file (compose.yaml builds them all):
#   docker build -t ranklab-app .                         # the web app (no torch in it)
#   docker build -t ranklab-agent --target agent .        # a job-bus agent (torch)
#   docker build -t ranklab-executor --target executor .  # the HTTP executor service (torch)
# The app never imports torch, so its image stays small; agents and executors run on their own
# hosts. Every image installs from a lock file in requirements/ (exact versions, hashes checked;
# `make lock` refreshes them), for Linux x86_64. The torch images take the CPU build by default
# (from PyTorch's CPU index: a small image); --build-arg TORCH=cuda takes PyPI's CUDA build,
# the one a GPU agent needs. TORCH_CPU_INDEX names a mirror of the CPU index.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/ranklab
COPY pyproject.toml README.md alembic.ini ./
COPY requirements ./requirements
COPY app ./app
COPY executor ./executor
COPY alembic ./alembic
COPY templates ./templates
COPY static ./static
COPY challenges ./challenges

FROM base AS torch
# The sandbox needs root in the container and writable cgroups: v1 memory/pids hierarchies, or
# v2 with the host's cgroup namespace (`--cgroupns=host`; see executor/README.md); without them
# untrusted code is refused instead of run bare.
# libseccomp2 builds the ranks' seccomp allow-list (through pyseccomp); slim images carry it for
# apt already, this says that the executor relies on it.
RUN apt-get update && apt-get install -y --no-install-recommends libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
ARG TORCH=cpu
ARG TORCH_CPU_INDEX=https://download.pytorch.org/whl/cpu
RUN case "$TORCH" in \
      cpu) index="--extra-index-url $TORCH_CPU_INDEX" ;; \
      cuda) index="" ;; \
      *) echo "TORCH is cpu or cuda, not $TORCH" >&2; exit 1 ;; \
    esac \
    && pip install --require-hashes $index -r "requirements/executor-$TORCH.lock" \
    && pip install --no-deps --no-build-isolation -e .

FROM torch AS executor
EXPOSE 8001
# /healthz answers 503 until the warm pool is up (torch imported): allow for that at start.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8001/healthz', timeout=4)"]
CMD ["ranklab", "executor", "serve", "--host", "0.0.0.0", "--port", "8001"]

FROM torch AS agent
# Pulls runs from Redis (RANKLAB_QUEUE_URL); no port. RANKLAB_AGENT_POOL=gpu on GPU hosts.
ENV RANKLAB_AGENT_POOL=cpu RANKLAB_AGENT_SLOTS=2
# Healthy while this container's agent has a fresh heartbeat in its pool (executor/bus.py):
# it beats every 2 s once torch is warm.
HEALTHCHECK --interval=30s --timeout=5s --start-period=120s --retries=3 \
    CMD python -c "import os, socket, sys, time, redis; from executor import bus; \
client = redis.Redis.from_url(os.environ['RANKLAB_QUEUE_URL'], decode_responses=True); \
beats = client.hgetall(bus.agents_key(os.environ['RANKLAB_AGENT_POOL'])); \
live = bus.live_agents(beats, time.time()); \
sys.exit(0 if any(name.startswith(socket.gethostname() + '-') for name in live) else 1)"
CMD ["sh", "-c", "exec ranklab agent --queue \"$RANKLAB_QUEUE_URL\" --pool \"$RANKLAB_AGENT_POOL\" --slots \"$RANKLAB_AGENT_SLOTS\""]

FROM base AS app
# Editable, so the app finds templates/, static/, challenges/ and alembic/ beside its code.
RUN pip install --require-hashes -r requirements/app.lock \
    && pip install --no-deps --no-build-isolation -e . \
    && useradd --system --home /srv/ranklab ranklab && mkdir -p var && chown ranklab var
USER ranklab
ENV RANKLAB_ENVIRONMENT=production
EXPOSE 8000
# The home page reads the database and the catalog: a fair sign that pages can be served.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/', timeout=4)"]
# Migrate, then serve; RANKLAB_SECRET_KEY, DATABASE_URL and RANKLAB_QUEUE_URL (or
# RANKLAB_EXECUTOR_URL) come from the host; RANKLAB_WEB_WORKERS processes serve (default 1).
CMD ["sh", "-c", "ranklab db upgrade && exec ranklab serve --no-executor --host 0.0.0.0 --port 8000 --workers \"${RANKLAB_WEB_WORKERS:-1}\""]
