# stitch container image: the static stitch binary FROM scratch, running as a non-root user.
#
#   make image                      # IMAGE=stitch:dev; VERSION, COMMIT, BUILD_DATE from git
#   docker run --rm stitch:dev --version
#   docker run --rm -p 8080:8080 stitch:dev                      # serve with the built-in simulator
#   docker run --rm -p 8080:8080 stitch:dev serve --upstream http://host.docker.internal:8000
#
# No base image and no registry: `make image` builds the binary on this machine (CGO_ENABLED=0,
# -trimpath, -ldflags "-s -w"; Go cross-compiles, so no toolchain image is needed) and stages it
# with /etc/passwd, /etc/group and a CA bundle under .image/ (see the Makefile), and this file only
# copies that in. It uses no BuildKit-only syntax, so the classic builder (DOCKER_BUILDKIT=0) and
# BuildKit build it alike. .dockerignore keeps the build context to .image/.
#
# scratch has no shell, wget or curl: the HEALTHCHECK is the binary's own `stitch healthcheck`,
# which GETs /readyz on 127.0.0.1 at the port of STITCH_LISTEN. The same image runs the
# simulator: `docker run stitch:dev sim --listen 0.0.0.0:8000`.

FROM scratch
ARG VERSION=dev
ARG COMMIT=
ARG BUILD_DATE=
LABEL org.opencontainers.image.title="stitch" \
      org.opencontainers.image.description="OpenAI Responses API in front of vLLM that keeps the exact token ids of every conversation" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${BUILD_DATE}" \
      org.opencontainers.image.source="https://github.com/stitchllm/stitch"
# /usr/local/bin/stitch, /etc/passwd and /etc/group (user stitch, 65532), the CA bundle, /var/lib;
# owned by root.
COPY .image/rootfs/ /
# The embedded response store lives here, owned by the runtime user; mount a volume on it to keep
# responses across restarts.
COPY --chown=65532:65532 .image/data/ /var/lib/stitch/
WORKDIR /var/lib/stitch
USER 65532:65532
# Container defaults (flags and other STITCH_* variables still override them): listen on every
# interface, keep the embedded store in the directory above.
ENV STITCH_LISTEN=:8080 \
    STITCH_DATA_DIR=/var/lib/stitch
EXPOSE 8080
# Ready means serving and the upstream answering (/readyz); the probe follows STITCH_LISTEN.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["/usr/local/bin/stitch", "healthcheck"]
ENTRYPOINT ["/usr/local/bin/stitch"]
CMD ["serve"]
