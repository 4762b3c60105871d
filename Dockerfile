# Build a release binary, then run it from a slim image with a config file.
FROM rust:1.90-bookworm AS build
WORKDIR /src
COPY Cargo.toml Cargo.lock ./
COPY src ./src
COPY benches ./benches
RUN cargo build --release --locked --bin keyclaim

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 keyclaim
COPY --from=build /src/target/release/keyclaim /usr/local/bin/keyclaim
COPY config.toml /etc/keyclaim/config.toml
USER keyclaim
EXPOSE 5433
# Listen on all interfaces inside the container; publish the port to choose who reaches it.
# With the default trust authentication keyclaim then refuses to start: give it
# a password, as PostgreSQL's image takes one: KEYCLAIM_PASSWORD (or
# KEYCLAIM_PASSWORD_FILE=/run/secrets/..., and KEYCLAIM_USER, default keyclaim),
# or KEYCLAIM_AUTH_ALLOW_TRUST_BEYOND_LOOPBACK=true to let anyone who reaches it in.
ENV KEYCLAIM_LISTEN=0.0.0.0:5433
ENTRYPOINT ["keyclaim", "--config", "/etc/keyclaim/config.toml"]
