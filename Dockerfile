# syntax=docker/dockerfile:1
# Two images from one source:
#   docker build -t ghcr.io/gpunode/gpunode:TAG .                             (the bot, last stage)
#   docker build --target collector -t ghcr.io/gpunode/gpunode-collector:TAG .  (the Job's)
# The collector image holds only what `gpunode collect` imports (bot.cli.main, bot.collectors,
# bot.core.memory, bot.core.redaction, bot.errors: the standard library) and NVML's bindings:
# it is the first pull on a memory-starved node, inside the Job's deadline.

# --- builder: build gpunode's wheel (templates force-included as bot/_templates, the .po
# catalogs as bot/_locales, read at runtime: nothing to compile), deploy/base
# as bot/_deploy/base; gpunode_sandbox/ never enters the build context), and the
# wheels of its dependencies, so the final stage installs offline without build tools.
FROM python:3.11-slim AS builder
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
WORKDIR /src
COPY pyproject.toml README.md ./
COPY bot ./bot
COPY templates ./templates
COPY locales ./locales
COPY deploy/base ./deploy/base
# The production image leaves the sandbox out: the stand-ins (a Kubernetes API that trusts
# token-less requests, a fake Slack, a fake GPU) have no business in a cluster. `gpunode demo`,
# `gpunode sandbox` and `collect --fake-nvml` say so there; run them from a source checkout.
RUN pip wheel --wheel-dir /wheels .

# --- native: the collector's optional C module (bot/collectors/_statm.c, the statm loop of a
# busy node; issue #25), compiled by the full python:3.11 image, which has the compiler and the
# headers the slim ones lack, for the same CPython 3.11 ABI the collector stage runs. Without
# it the collector reads statm in Python; here its absence fails the build (`ls`).
FROM python:3.11 AS native
WORKDIR /src
COPY bot/__init__.py ./bot/
COPY bot/collectors/__init__.py bot/collectors/native.py bot/collectors/_statm.c ./bot/collectors/
RUN python -m bot.collectors.native /native && ls /native/_statm.cpython-311-*.so

# --- collector: `gpunode collect` and nvidia-ml-py, nothing else (kube.image). The module list
# is the import closure of `gpunode collect`; tests/deploy/test_collector_image.py recomputes
# it and compares, so a new import in the collector cannot be left out of the image. The
# DaemonSet mode's `gpunode agent` runs from it too (tests/deploy/test_agent_image.py).
# The Job starts `python -I -S /opt/gpunode/bot/__main__.py collect ...` (an admission policy
# pins it; bot/__main__.py puts /opt/gpunode on sys.path, -S skips site-packages), so NVML's
# bindings are installed into /opt/gpunode too. The agent starts `python -I -m bot agent`, and
# -I ignores PYTHONPATH: /opt/gpunode reaches its sys.path through a .pth file in site-packages.
# Their root filesystem is read-only and PYTHONDONTWRITEBYTECODE is set, so the code is
# byte-compiled here, once: otherwise every collection would compile it again at start-up.
# Then the Job's code pack (bot/collectors/codepack.py): the modules `collect` imports,
# compiled into one file its run loads at once; each is served only while its source is as
# it was built from, else imported the ordinary way.
FROM python:3.11-slim AS collector
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
RUN --mount=type=bind,from=builder,source=/wheels,target=/wheels \
    pip install --no-index --find-links=/wheels --target /opt/gpunode nvidia-ml-py
COPY --from=builder /src/bot/__init__.py /src/bot/__main__.py /src/bot/errorbase.py /src/bot/errors.py /opt/gpunode/bot/
COPY --from=builder /src/bot/cli/__init__.py /src/bot/cli/main.py /opt/gpunode/bot/cli/
COPY --from=builder /src/bot/collectors/ /opt/gpunode/bot/collectors/
COPY --from=native /native/ /opt/gpunode/bot/collectors/
COPY --from=builder /src/bot/core/__init__.py /opt/gpunode/bot/core/
COPY --from=builder /src/bot/core/diagnosis/__init__.py /src/bot/core/diagnosis/memory.py /opt/gpunode/bot/core/diagnosis/
COPY --from=builder /src/bot/core/model/__init__.py /src/bot/core/model/redaction.py /opt/gpunode/bot/core/model/
RUN python -c "import site; open(site.getsitepackages()[0] + '/gpunode.pth', 'w').write('/opt/gpunode\n')" \
 && python -m compileall -q /opt/gpunode \
 && python -I -m bot.collectors.codepack /opt/gpunode > /dev/null \
 && printf '#!/usr/local/bin/python\nfrom bot.cli.main import main\nraise SystemExit(main())\n' \
      > /usr/local/bin/gpunode \
 && chmod 0755 /usr/local/bin/gpunode \
 && gpunode collect --help > /dev/null \
 && python -I -m bot collect --help > /dev/null \
 && python -I -S /opt/gpunode/bot/__main__.py collect --help > /dev/null \
 && python -I -S -c "import sys; sys.path.insert(0, '/opt/gpunode'); import pynvml" \
 && python -I -S -c "import sys; sys.path.insert(0, '/opt/gpunode'); from bot.collectors import procfs; assert procfs.NATIVE_RANK"
USER 65534:65534
ENTRYPOINT ["gpunode"]
CMD ["collect", "--root", "/", "--format", "text"]

# --- final: the runtime only; no compiler, no pip cache, no sources.
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1
# Noto Sans CJK (Debian's fonts-noto-cjk): charts for a zh-CN reader carry Chinese titles,
# axes and legends (bot/charts/rendering.py FONT_FAMILY); without it every glyph is a box.
RUN apt-get update -qq \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends fonts-noto-cjk \
 && rm -rf /var/lib/apt/lists/*
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
