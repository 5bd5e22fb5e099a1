# The image docker-compose.yml runs as `api`, `worker` and `migrate`.
FROM node:20-bookworm-slim
WORKDIR /app
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci --omit=dev
COPY . .
ENV BERTH_HOST=0.0.0.0 PORT=8080
EXPOSE 8080
CMD ["node", "bin/berth.js", "api"]
