# syntax=docker/dockerfile:1
# nudge's image: one static binary on distroless/static, run as the nonroot
# user (65532), with nothing else to run. Build:
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t ghcr.io/nudge-dev/nudge:<version> .
# Multi-platform: docker buildx build --platform linux/amd64,linux/arm64 .
# The binary is cross-compiled on the build platform (no emulation).

ARG GO_VERSION=1.26

FROM --platform=$BUILDPLATFORM golang:${GO_VERSION} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY cmd/ cmd/
COPY internal/ internal/
ARG TARGETOS=linux
ARG TARGETARCH
# The version nudge reports (nudge version, its start log line,
# nudge_build_info): pass --build-arg VERSION=$(git describe --tags --always --dirty).
ARG VERSION=dev
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags "-s -w -X nudge.dev/nudge/internal/version.stamped=${VERSION}" -o /out/nudge ./cmd/nudge

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
LABEL org.opencontainers.image.title="nudge" \
      org.opencontainers.image.description="Rolls Kubernetes workloads when the ConfigMaps and Secrets they use change" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/nudge /nudge
USER 65532:65532
# Metrics (--metrics-bind-address) and health probes (--health-probe-bind-address).
EXPOSE 9090 8081
ENTRYPOINT ["/nudge"]
