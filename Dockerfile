# syntax=docker/dockerfile:1
# The petstore image: the released binary (make release) on a minimal glibc base, as a non-root user.
#
#   make docker                      # make release, then docker, podman or buildah, whichever is there
#   docker buildx build --platform linux/arm64 -t petstore:arm64 .   # after make release: the arm64 image
#   docker run -p 8080:8080 -v petstore-data:/var/lib/petstore \
#     -v /etc/petstore/keys.json:/etc/petstore/keys.json:ro -e PETSTORE_KEYS_FILE=/etc/petstore/keys.json petstore
#
# The image holds dist/release/petstore-<version>-linux-<x64|arm64>, chosen by the build's
# TARGETARCH and checked against dist/release/SHA256SUMS: the image runs the very file that was
# released and smoke-tested (make release-test), so the same Dockerfile makes amd64 and arm64
# images. Both base images are build arguments, so a mirror or a base assembled locally can stand
# in: scripts/image-test.sh builds this file with no registry at all.
ARG BUILDER_IMAGE=docker.io/library/debian:12-slim
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

# Runs on the build machine's own platform: it only picks, checks and copies a file.
FROM --platform=$BUILDPLATFORM ${BUILDER_IMAGE} AS pick
ARG TARGETARCH
WORKDIR /release
COPY dist/release/SHA256SUMS dist/release/petstore-*-linux-x64 dist/release/petstore-*-linux-arm64 ./
RUN case "$TARGETARCH" in \
      amd64) target=linux-x64 ;; \
      arm64) target=linux-arm64 ;; \
      *) echo "no petstore binary for TARGETARCH '$TARGETARCH': make release builds amd64 (x64) and arm64" >&2; exit 1 ;; \
    esac \
 && bin=$(ls petstore-*-"$target") \
 && grep "  $bin\$" SHA256SUMS | sha256sum -c - \
 && mkdir -p /out/data \
 && cp "$bin" /out/petstore

FROM ${RUNTIME_IMAGE}
COPY --from=pick /out/petstore /usr/local/bin/petstore
# The data directory exists and belongs to the service user, so a new named volume inherits both.
COPY --from=pick --chown=65532:65532 /out/data /var/lib/petstore
USER 65532:65532
WORKDIR /var/lib/petstore
ENV PORT=8080 \
    HOST=0.0.0.0 \
    PETSTORE_DATA=/var/lib/petstore/petstore.db \
    PETSTORE_LOG_FORMAT=json
VOLUME ["/var/lib/petstore"]
EXPOSE 8080
# `petstore healthcheck` asks /healthz on $PORT: no shell or curl needed in the image.
HEALTHCHECK --interval=30s --timeout=5s --start-period=10s --retries=3 CMD ["/usr/local/bin/petstore", "healthcheck"]
STOPSIGNAL SIGTERM
ENTRYPOINT ["/usr/local/bin/petstore"]
