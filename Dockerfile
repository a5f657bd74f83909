# syntax=docker/dockerfile:1
# One image, two uses: `gpunode serve` (the bot, the default CMD) and `gpunode collect` (the
# diagnostic Job on each node, which overrides the args and, for hostPID/host mounts, the user).

# --- builder: build gpunode's wheel (templates force-included as bot/_templates, deploy/base
# as bot/_deploy/base) without the sandbox, and the
# wheels of its dependencies, so the final stage installs offline without build tools.
FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY templates ./templates
COPY deploy/base ./deploy/base
# The production image leaves the sandbox out: the stand-ins (a Kubernetes API that trusts
# token-less requests, a fake Slack, a fake GPU) have no business in a cluster. `gpunode demo`,
# `gpunode sandbox` and `collect --fake-nvml` say so there; run them from a source checkout.
RUN rm -rf bot/sandbox && pip wheel --wheel-dir /wheels .

# --- final: the runtime only; no compiler, no pip cache, no sources.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN groupadd --gid 10001 gpunode \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin gpunode \
 && install -d -o 10001 -g 10001 /var/lib/gpunode
# Bind-mount the wheels for the install only, so they never become an image layer.
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels gpunode
# matplotlib's font cache, built once here rather than at every start (seconds on a busy node);
# owned by the runtime user, since matplotlib only uses a config dir it can write.
ENV MPLCONFIGDIR=/opt/gpunode/matplotlib
RUN install -d -o 10001 -g 10001 /opt/gpunode/matplotlib \
 && setpriv --reuid=10001 --regid=10001 --clear-groups python -c "import bot.charts"
WORKDIR /var/lib/gpunode
USER 10001:10001
EXPOSE 3000
ENTRYPOINT ["gpunode"]
CMD ["serve"]
