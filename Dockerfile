# syntax=docker/dockerfile:1
# The petstore image: the Bun-compiled binary on a minimal glibc base, run as a non-root user.
#
#   make docker                      # docker, podman or buildah, whichever is there
#   docker run -p 8080:8080 -v petstore-data:/var/lib/petstore \
#     -v /etc/petstore/keys.json:/etc/petstore/keys.json:ro -e PETSTORE_KEYS_FILE=/etc/petstore/keys.json petstore
#
# Both base images are build arguments, so a mirror or a base assembled locally can stand in:
# scripts/image-test.sh builds this file with no registry at all. The builder's bun is the one
# package-lock.json pins (image-test checks the tag), so the image's binary is make build's.
ARG BUILDER_IMAGE=docker.io/oven/bun:1.4.5-debian
ARG RUNTIME_IMAGE=gcr.io/distroless/cc-debian12:nonroot

FROM ${BUILDER_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# Runtime dependencies only: the compiler is the image's own bun, of the version package.json pins.
RUN bun install --frozen-lockfile --production --ignore-scripts
COPY tsconfig.json ./
COPY contract ./contract
COPY scripts/embed-docs.ts ./scripts/
COPY src ./src
# The same flags as scripts/build.sh; running the result catches a bytecode build that cannot start.
RUN bun scripts/embed-docs.ts \
 && bun build --compile --bytecode --format=esm --minify --sourcemap=none src/main.ts --outfile /out/petstore \
 && /out/petstore --version \
 && mkdir -p /out/data

FROM ${RUNTIME_IMAGE}
COPY --from=build /out/petstore /usr/local/bin/petstore
# The data directory exists and belongs to the service user, so a new named volume inherits both.
COPY --from=build --chown=65532:65532 /out/data /var/lib/petstore
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
