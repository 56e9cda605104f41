# syntax=docker/dockerfile:1
# Gatehouse's `policy` tool as a container that runs `policy serve` (docs/deploy.md, "Containers").
#   docker build -t gatehouse .
#   docker run -p 8080:8080 -e GATEHOUSE_POLICIES=/policies -v "$PWD/policies/mimisupply:/policies:ro" gatehouse
# Build stage: the Swift 6.3 toolchain image; the binary is linked with the Swift runtime built in, so the
# run stage needs only the C libraries it calls (SQLite, curl for Apple's key fetches, libxml2 for
# FoundationNetworking) and curl for the health check.

FROM swift:6.3-noble AS build
WORKDIR /src
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-dev libyaml-dev \
    && rm -rf /var/lib/apt/lists/*
# Dependencies first, so a change to the sources does not fetch them again.
COPY Package.swift ./
COPY Plugins ./Plugins
RUN mkdir -p Sources && swift package resolve
COPY . .
RUN swift build -c release --product policy --static-swift-stdlib \
    && install -D "$(swift build -c release --show-bin-path)/policy" /out/policy

FROM ubuntu:24.04
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends libsqlite3-0 libcurl4 libxml2 ca-certificates tzdata curl \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /var/lib/gatehouse --create-home gatehouse
# A user without a login, by number so every host resolves it: the server needs no privilege.
COPY --from=build /out/policy /usr/local/bin/policy
COPY policies /etc/gatehouse/policies
USER 10001
WORKDIR /var/lib/gatehouse
ENV GATEHOUSE_POLICIES=/etc/gatehouse/policies/research-crawler \
    GATEHOUSE_DATABASE=/var/lib/gatehouse/identity.sqlite \
    GATEHOUSE_HOST=0.0.0.0 \
    GATEHOUSE_PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["sh", "-c", "curl -fsS http://127.0.0.1:8080/healthz || exit 1"]
ENTRYPOINT ["policy", "serve"]
