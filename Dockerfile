# The loadbench image that deploy/kubernetes/ runs (docs/distributed.md, "Kubernetes"):
#
#   docker build -t loadbench:0.1.0 .
#   docker run --rm --network host loadbench:0.1.0 run http://127.0.0.1:8080/ -d 10s
#
# Stage 1 builds the binary as the README does (the release profile, the committed Cargo.lock);
# stage 2 is Debian slim with that binary and the CA certificates for https:// targets.
# crates/cli/tests/docker.rs checks that this file, the workspace and the manifests agree.

FROM rust:1.95-slim-bookworm AS builder
# --script's LuaJIT (crates/script) is built from source with make.
RUN apt-get update \
    && apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
# The linker driver (crates/cli/link/cc): glibc static and the hot code together, as a local build.
COPY .cargo ./.cargo
COPY crates ./crates
RUN cargo build --release --locked -p loadbench-cli

FROM debian:bookworm-slim
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/*
COPY --from=builder /src/target/release/loadbench /usr/local/bin/loadbench
ENTRYPOINT ["loadbench"]
CMD ["--help"]
