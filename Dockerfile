# syntax=docker/dockerfile:1
# The llmscaler manager image: the project's wheel installed into a virtualenv, nothing else.
#
# Both base images are build args so a mirror can be used where Docker Hub is unreachable:
#   docker build --build-arg PYTHON_IMAGE=<mirror>/python:3.11-slim \
#                --build-arg RUNTIME_IMAGE=<mirror>/python:3.11-slim -t <registry>/llm-operator:<tag> .
# The virtualenv links to the build image's interpreter (/usr/local/bin/python3.11), so the runtime
# image must ship the same Python at the same path; two python:3.11-slim images (or mirrors of one)
# satisfy that. That is why the default runtime is python:3.11-slim rather than a distroless image,
# whose interpreter lives elsewhere.
ARG PYTHON_IMAGE=python:3.11-slim
ARG RUNTIME_IMAGE=python:3.11-slim

FROM ${PYTHON_IMAGE} AS build
ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1
WORKDIR /build
# Only what the wheel is built from; tests, docs and the chart never reach the image. The venv
# is byte-compiled here because the container's root filesystem is read-only at run time.
COPY pyproject.toml README.md ./
COPY src ./src
RUN python -m pip wheel --no-deps --wheel-dir /wheels . \
 && python -m venv /opt/llmscaler \
 && /opt/llmscaler/bin/pip install /wheels/*.whl \
 && /opt/llmscaler/bin/pip uninstall -y pip \
 && /opt/llmscaler/bin/python -m compileall -q /opt/llmscaler/lib

FROM ${RUNTIME_IMAGE}
ARG VERSION=0.1.0
LABEL org.opencontainers.image.title="llmscaler" \
      org.opencontainers.image.description="Kubernetes operator that autoscales LLM inference servers" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /opt/llmscaler /opt/llmscaler
ENV PATH=/opt/llmscaler/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
# 65532 is the conventional "nonroot" uid/gid; numeric so runAsNonRoot can verify it.
USER 65532:65532
ENTRYPOINT ["llmscaler-manager"]
