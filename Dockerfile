# One image for every part of wallet-ops (write-api, read-api, projections, executor) and for the operator
# CLI: `docker run IMAGE node bin/wallet-ops.js --help`. docker-compose.yml runs each part as its own service.
#
# The sources are TypeScript run by tsx at start (bin/wallet-ops.js registers it; there is no build step),
# and tsx is listed under devDependencies in package.json, so the image installs every dependency:
# `npm ci --omit=dev` would leave the CLI unable to start.

FROM node:20-slim AS dependencies
WORKDIR /app
# better-sqlite3 (the embedded stores and the embedded ledger) is compiled when no prebuilt binary fits.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund && npm cache clean --force

FROM node:20-slim
WORKDIR /app
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=3000 \
    DATA_DIR=/data
COPY --from=dependencies /app/node_modules ./node_modules
COPY package.json package-lock.json tsconfig.json ./
COPY bin ./bin
COPY src ./src
# The data directory holds the embedded ledger (and the embedded stores when they are chosen); it belongs
# to the unprivileged `node` user of the base image, who runs everything, and to no one else (wallet-ops
# writes its files there 0600).
RUN mkdir -p /data && chown node:node /data && chmod 700 /data
USER node
VOLUME ["/data"]
EXPOSE 3000
# Every part answers /health on PORT, also the projections and the executor.
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "bin/wallet-ops.js", "serve"]
