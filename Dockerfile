# syntax=docker/dockerfile:1
#
# stitch container image: a static Go binary on Alpine, running as a non-root user.
#
#   docker build -t stitch:dev \
#     --build-arg VERSION=$(git describe --tags --always) \
#     --build-arg COMMIT=$(git rev-parse HEAD) \
#     --build-arg BUILD_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ) .
#   docker run --rm stitch:dev --version
#
# (`make docker` does exactly this.) The same image runs `stitch serve` (the default command) and
# `stitch sim` (the CPU vLLM simulator): `docker run stitch:dev sim --listen 0.0.0.0:8000`.
#
# Why Alpine and not distroless/scratch: the HEALTHCHECK needs an HTTP client inside the image, and
# stitch deliberately has no `healthcheck` subcommand. Alpine's busybox provides `wget` for ~8 MB;
# the stitch binary itself is static (CGO_ENABLED=0) and needs nothing from the base image but CA
# certificates (for an https upstream or rediss:// Redis).

ARG GO_VERSION=1.26.8
ARG ALPINE_VERSION=3.22

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-alpine AS build
WORKDIR /src
# Module downloads are a separate layer: they change far less often than the sources.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=
ARG BUILD_DATE=
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT} -X main.buildDate=${BUILD_DATE}" \
      -o /out/stitch . \
 && mkdir -p /out/data

FROM alpine:${ALPINE_VERSION}
ARG VERSION=dev
ARG COMMIT=
ARG BUILD_DATE=
LABEL org.opencontainers.image.title="stitch" \
      org.opencontainers.image.description="OpenAI Responses API in front of vLLM that keeps the exact token ids of every conversation" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.created="${BUILD_DATE}" \
      org.opencontainers.image.source="https://github.com/stitchllm/stitch"
RUN apk add --no-cache ca-certificates \
 && addgroup -S -g 65532 stitch \
 && adduser -S -D -H -u 65532 -G stitch -h /var/lib/stitch -s /sbin/nologin stitch
COPY --from=build /out/stitch /usr/local/bin/stitch
# The embedded response store lives here; mount a volume on it to keep responses across restarts.
COPY --from=build --chown=65532:65532 /out/data /var/lib/stitch
WORKDIR /var/lib/stitch
USER 65532:65532
# Container defaults (flags and other STITCH_* variables still override them):
# listen on every interface, keep the embedded store in the volume above.
ENV STITCH_LISTEN=:8080 \
    STITCH_DATA_DIR=/var/lib/stitch
EXPOSE 8080
# /healthz is liveness only (the process serves HTTP); /readyz also checks the upstream.
# If you move the listener off :8080, override the health check too.
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["wget", "-q", "-T", "2", "-O", "/dev/null", "http://127.0.0.1:8080/healthz"]
ENTRYPOINT ["/usr/local/bin/stitch"]
CMD ["serve"]
