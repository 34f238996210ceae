# syntax=docker/dockerfile:1
# quan's image: a static binary on distroless, as a non-root user.
#
#   docker build -t quan .
#   docker run -p 8080:8080 -v quan-data:/data quan            # quan serve
#   docker run -v quan-data:/data quan worker --bus nats://...  # any subcommand
#
# The build stage runs deploy/build.sh, which CI runs too (no Docker there):
# it builds with CGO_ENABLED=0 and -trimpath, checks the binary is static,
# and runs it as an unprivileged user.

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN deploy/build.sh /out/quan \
 && install -d -o 65532 -g 65532 -m 700 /out/data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/quan /usr/local/bin/quan
COPY --from=build --chown=65532:65532 /out/data /data
# distroless's "nonroot" user.
USER 65532:65532
# The admin listener (metrics, probes, pprof) listens on every interface so
# Prometheus can reach it from another container: publish 9090 only to the
# monitoring network, never to the internet.
ENV QUAN_DATA=/data \
    QUAN_ADDR=:8080 \
    QUAN_ADMIN_ADDR=:9090 \
    QUAN_LOG_FORMAT=json
VOLUME /data
EXPOSE 8080 9090
ENTRYPOINT ["quan"]
CMD ["serve"]
