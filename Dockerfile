# Tabula's one binary, `tabula`, in a small image.
#   docker build -t tabula .
#   docker run --rm tabula --help
# docker-compose.yml uses it for the masters and tablet servers.

FROM golang:1.26 AS build
WORKDIR /src
# Modules first, so that code changes reuse the download layer.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/tabula ./cmd/tabula
# The data folder, owned by the image's unprivileged user (distroless has no
# shell to create it later); a new volume mounted there inherits the owner.
RUN mkdir -p /out/data

# SeaweedFS, the S3-compatible store docker-compose.yml keeps the tablets
# in: the version `make tools` pins and the tests run against, built from its
# module as the main module (its replace directives refuse `go install`).
#   docker build --target weed -t tabula-weed .
FROM golang:1.26 AS weed-build
ARG WEED_VERSION=v0.0.0-20261109003541-7506e5f91cd6
RUN src=$(go mod download -json github.com/seaweedfs/seaweedfs@$WEED_VERSION | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p') && \
    test -n "$src" && cp -r "$src" /weed-src && chmod -R u+w /weed-src && \
    cd /weed-src && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/weed ./weed && \
    mkdir -p /out/data

FROM gcr.io/distroless/static-debian12:nonroot AS weed
COPY --from=weed-build /out/weed /usr/local/bin/weed
COPY --from=weed-build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 8333
ENTRYPOINT ["/usr/local/bin/weed"]

# Tabula itself: the last stage, so a plain `docker build .` makes it.
# Runs as the unprivileged "nonroot" user (uid 65532), never as root.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/tabula /usr/local/bin/tabula
COPY configs/ /etc/tabula/
COPY --from=build --chown=65532:65532 /out/data /data
USER 65532:65532
VOLUME ["/data"]
EXPOSE 7100 7200
ENTRYPOINT ["/usr/local/bin/tabula"]
CMD ["--help"]
