# parsemcp in a container: a static binary on a distroless base, run as a
# non-root user. Build: docker build -t parsemcp .
# Run (the demo): docker run --rm -p 8787:8787 parsemcp serve --demo --addr 0.0.0.0:8787 --api-key "$KEY"
# Configure with PARSEMCP_* variables or a mounted --config file (docs/OPERATIONS.md).

FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
# The patched go-sdk copy go.mod replaces the SDK with (third_party/go-sdk/PATCHES.md).
COPY third_party/go-sdk ./third_party/go-sdk
RUN go mod download
COPY . .
ARG VERSION=dev
# The server's build: ask, chat and console (the LLM commands) are left out,
# which saves serve about 20 MB of memory; they answer with how to get
# parsemcp-llm (cmd/parsemcp/llmcommands.go).
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/parsemcp/parsemcp/mcpserver.Version=${VERSION}" -o /out/parsemcp ./cmd/parsemcp

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/parsemcp /usr/local/bin/parsemcp
# The demo dataset and other caches go under $HOME (writable by nonroot).
ENV HOME=/home/nonroot
USER nonroot:nonroot
EXPOSE 8787
ENTRYPOINT ["/usr/local/bin/parsemcp"]
CMD ["serve", "--demo", "--addr", "0.0.0.0:8787"]
