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
