# Two images from one file:
#   docker build -t ranklab-app .                      # the web app (no torch in it)
#   docker build -t ranklab-executor --target executor .  # the executor service (torch, CPU build)
# The app never imports torch, so its image stays small; executors run on their own hosts.

FROM python:3.11-slim AS base
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /srv/ranklab
COPY pyproject.toml README.md alembic.ini ./
COPY app ./app
COPY executor ./executor
COPY alembic ./alembic
COPY templates ./templates
COPY static ./static
COPY challenges ./challenges

FROM base AS executor
# The sandbox needs root in the container and cgroup v1 memory/pids hierarchies (see
# executor/README.md); without them the executor refuses untrusted code instead of running it bare.
# Pass --build-arg TORCH_INDEX=<your PyTorch CPU wheel index> for the small CPU-only build.
ARG TORCH_INDEX=""
RUN pip install ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} "torch==2.13.*" \
    && pip install -e '.[executor]'
EXPOSE 8001
CMD ["ranklab", "executor", "serve", "--host", "0.0.0.0", "--port", "8001"]

FROM base AS app
# Editable, so the app finds templates/, static/, challenges/ and alembic/ beside its code.
RUN pip install -e . && useradd --system --home /srv/ranklab ranklab && mkdir -p var \
    && chown ranklab var
USER ranklab
ENV RANKLAB_ENVIRONMENT=production
EXPOSE 8000
# Migrate, then serve; RANKLAB_SECRET_KEY, DATABASE_URL and RANKLAB_EXECUTOR_URL come from the host.
CMD ["sh", "-c", "ranklab db upgrade && ranklab serve --no-executor --host 0.0.0.0 --port 8000"]
