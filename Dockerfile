# One image for every part of wallet-ops (write-api, read-api, projections, executor) and for the operator
# CLI: `docker run IMAGE node bin/wallet-ops.js --help`. docker-compose.yml runs each part as its own service.
# Build: `docker build -t wallet-ops:local .` (docs/operations.md, "The image", says what is in it and its size).
#
# The image runs compiled JavaScript (dist/, from `npm run build`) on Node 24 as the unprivileged `node` user,
# with production dependencies only: no TypeScript, no tsx, no test tools, no compiler. Three stages build it:
#   build                    all dependencies and tsc
#   production-dependencies  `npm ci --omit=dev`, slimmed (scripts/slim-node-modules.js)
#   (final)                  node:24-slim + those node_modules + dist/ + bin/ + package.json
# No stage runs an install script (--ignore-scripts), so none needs Python or a compiler: better-sqlite3 13
# ships its addon prebuilt for Node-API (any Node >= 22.14; linux x64 and arm64, glibc and musl), and the only
# other scripts are the `node` devDependency's (a Node 24 for machines whose system Node is older; this image
# has its own), esbuild's and protobufjs's, which nothing here needs (package.json's allowScripts says the same
# for npm >= 11.19; the flag also holds on the npm this base image bundles, whatever its version).
# test/deploy/dockerfile.int.test.ts checks this file: Node 24, multi-stage, --omit=dev, compiled entry point,
# non-root user, health check.

FROM node:24-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY scripts ./scripts
COPY src ./src
RUN npm run build

FROM node:24-slim AS production-dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY scripts/slim-node-modules.js ./scripts/
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && node scripts/slim-node-modules.js node_modules \
  && npm cache clean --force

FROM node:24-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data \
    SECRETS_KEY_FILE=/secrets/secrets.key
COPY --from=production-dependencies /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
# package.json says the compiled modules are ES modules; bin/wallet-ops.js runs dist/ when src/ is absent, as
# here, so that `node bin/wallet-ops.js` (docker-compose.yml, the operator CLI) runs the compiled code too.
COPY package.json ./
COPY bin ./bin
# The data directory holds the embedded ledger (and the embedded stores when they are chosen); it belongs
# to the unprivileged `node` user of the base image, who runs everything, and to no one else (wallet-ops
# writes its files there 0600). The application files stay root's: the process cannot rewrite its own code.
# The embedded secrets key (when SECRETS_KEY is not set) lives in a volume of its own, never in /data: a copy of the
# data volume then opens no sealed secret (docs/operations.md, "The secrets key").
RUN mkdir -p /data /secrets && chown node:node /data /secrets && chmod 700 /data /secrets
USER node
VOLUME ["/data", "/secrets"]
EXPOSE 3000
# Every part answers /health on PORT, also the projections and the executor.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "dist/cli/main.js", "serve"]
