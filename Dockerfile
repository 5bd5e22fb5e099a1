# The image docker-compose.yml runs as `api`, `worker` and `migrate`: the compiled build
# (`npm run build`, dist/) and the workflow bundle made once here, so a process neither
# compiles TypeScript (tsx) nor bundles workflows (webpack) when it starts; the worker
# starts at about 70 MB less (docs/performance.md).
FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build && node dist/bin/berth.js bundle dist/workflow-bundle.js

FROM node:20-bookworm-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY --from=build /app/dist ./dist
# MALLOC_ARENA_MAX: two malloc arenas, not eight per core: 20-30 MB less for a busy worker (docs/performance.md).
ENV BERTH_HOST=0.0.0.0 PORT=8080 BERTH_WORKFLOW_BUNDLE=/app/dist/workflow-bundle.js MALLOC_ARENA_MAX=2
EXPOSE 8080
CMD ["node", "dist/bin/berth.js", "api"]
