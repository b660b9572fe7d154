# kube-cache-proxy as a sidecar image. Node 24 runs the TypeScript sources directly (type
# stripping), so the image holds the sources and the production dependencies only.
# deploy/ shows how to add it to a Deployment; the in-cluster service account is used upstream.

FROM node:24-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --omit=dev: no node@24 binary, compilers or linters in the image; --ignore-scripts: nothing to build.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:24-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY bin/ ./bin/
COPY src/ ./src/
# The image's `node` user (uid 1000); nothing is written to the filesystem, so the root
# filesystem can be mounted read-only.
USER 1000:1000
EXPOSE 8001
ENTRYPOINT ["node", "bin/kube-cache-proxy.mjs"]
CMD ["start"]
