# The example people subgraph (examples/people-subgraph) for deploy/compose.yaml.
# Replace it with your own subgraphs.
FROM node:24-bookworm-slim
WORKDIR /app
COPY package.json package-lock.json ./
# The image's Node runs it; no install script is needed (see the main Dockerfile).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY examples/people-subgraph ./examples/people-subgraph
# HOST: listen beyond loopback. JITI_FS_CACHE: no transpile cache to write as `node`.
ENV HOST=0.0.0.0 \
    JITI_FS_CACHE=false
USER node
EXPOSE 4002
CMD ["node_modules/.bin/jiti", "examples/people-subgraph/main.ts"]
