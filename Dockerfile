# syntax=docker/dockerfile:1
# Build stage: full install (TypeScript, esbuild, the explorer's front end; codegen output
# is committed), check the types of src/ (`npm run build` compiles without checking
# them), compile to dist/, bundle the server (and the demo's emulator) into dist/main.js and build the
# explorer's browser files into dist/explorer/assets/ (scripts/bundle/).
# --ignore-scripts: no dependency needs an install script here, and the one that has
# an important one, the `node` devDependency (it downloads a Node binary for laptops
# with an old Node), is not wanted: this image already has Node 24, which then runs
# the build.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json schema.graphql ./
COPY src ./src
# The demo (no WFS_AUTH_URL, or WFS_DEMO=true) runs on the upstream emulator, which the
# bundle takes from tools/emulator/.
COPY tools/emulator ./tools/emulator
COPY scripts/bundle ./scripts/bundle
RUN node node_modules/typescript-7/bin/tsc -p tsconfig.build.json --noEmit --singleThreaded && npm run build

# Runtime stage: production dependencies only, non-root, no build tools, no front-end
# package (the explorer's React and GraphiQL files are built into dist/explorer/assets/).
FROM node:24-bookworm-slim AS runtime
# The image name deploy/ uses (docker build -t wfs-subgraph .).
LABEL org.opencontainers.image.title="wfs-subgraph"
ENV NODE_ENV=production \
    HOST=0.0.0.0 \
    PORT=4001
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY --from=build /app/dist ./dist
COPY schema.graphql ./schema.graphql
# Node's module compile cache, filled once here: every container then starts from
# compiled code instead of compiling the server bundle (dist/main.js: the server,
# Apollo Server, graphql-js and the rest in one file) again. Loading it starts nothing.
ENV NODE_COMPILE_CACHE=/app/.compile-cache
RUN mkdir -p /app/.compile-cache && node -e "require('./dist/compileCache'); require('./dist/main')" && chown -R node:node /app/.compile-cache
USER node
EXPOSE 4001
HEALTHCHECK --interval=15s --timeout=3s --start-period=10s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||4001)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
# A young generation of at most 2 x 8 MiB semi-spaces: under load V8 otherwise grows
# it to its default maximum, which is most of the resident memory (bench/README.md).
CMD ["node", "--max-semi-space-size=8", "--max-old-space-size=256", "dist/index.js"]
