# splitguard container image: a static binary on a minimal base, run as a
# non-root user. Build: docker build -t splitguard:VERSION .
# (The default build is pure Go; the optional OpenBLAS engine needs cgo and
# is not built here.)

# Stage 1: build the static binary.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV CGO_ENABLED=0 GOFLAGS=-trimpath
RUN go build -ldflags="-s -w" -o /out/splitguard ./cmd/splitguard \
 && mkdir -p /out/home /out/sweep

# Stage 2: only the binary, CA certificates and an empty home.
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/splitguard /usr/local/bin/splitguard
COPY --from=build --chown=65532:65532 /out/home /home/nonroot
COPY --from=build --chown=65532:65532 /out/sweep /sweep
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["splitguard"]
CMD ["--help"]
