# kube-cache-proxy as a sidecar image (deploy/ adds it to a Deployment; the pod's service account
# is its identity upstream). The image holds what `npm pack` packs (package.json "files": the
# JavaScript compiled from src/ by scripts/build.mjs, which `npm pack` runs as prepack, with the
# library's types; the example controller) and the production dependencies of package-lock.json,
# nothing else. It runs the JavaScript, not the TypeScript sources: type stripping costs every
# process ~27 MiB of RSS and ~0.25 s of start-up (docs/memory.md).
# test/e2e/deploy/packed-install.test.ts repeats these steps (pack, unpack, `npm ci --omit=dev`,
# start) against a real apiserver, and test/unit/deploy/dockerfile.test.ts checks this file. The
# Node version is the one the tests run on (the node@24 devDependency in package-lock.json).

# Build: the dev dependencies type-check the sources, then `npm pack` compiles them and selects
# what ships, and `npm ci --omit=dev` installs its runtime dependencies into /app.
FROM node:24.21.0-slim AS build
WORKDIR /build
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
# --ignore-scripts: the node@24 devDependency would fetch a second Node binary; the image has one.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY bin/ ./bin/
COPY scripts/build.mjs ./scripts/build.mjs
COPY src/ ./src/
COPY examples/ ./examples/
COPY tools/controlplane/ ./tools/controlplane/
RUN npx tsc --noEmit -p . \
  && npm pack --pack-destination /tmp \
  && mkdir /app \
  && tar -xzf /tmp/kube-cache-proxy-*.tgz --strip-components=1 -C /app \
  && cp package-lock.json /app/ \
  && cd /app \
  && npm ci --omit=dev --ignore-scripts --no-audit --no-fund

# Run: the official image with /app owned by root and read-only to the process, which runs as
# the image's unprivileged `node` user by number (so runAsNonRoot can verify it) and writes
# nothing: the root filesystem can be mounted read-only.
FROM node:24.21.0-slim
ENV NODE_ENV=production
# glibc's malloc keeps freed blocks below its (self-raising) mmap threshold in heaps that
# fragment: with it fixed at 32 KiB, the proxy's freed body pieces go back to the system, and a
# LIST burst's peak under a 160 MiB limit falls by ~50 MiB (src/cache/memory-budget.ts).
ENV MALLOC_MMAP_THRESHOLD_=32768
WORKDIR /app
COPY --from=build /app ./
USER 1000:1000
# The proxy's default port (kubectl proxy's); it listens on 127.0.0.1, for the pod's containers.
EXPOSE 8001
# No HEALTHCHECK: Kubernetes probes /livez and /readyz (deploy/sidecar/).
ENTRYPOINT ["node", "dist/cli/main.js"]
CMD ["proxy"]
