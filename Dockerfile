# syntax=docker/dockerfile:1
# probefleet image: one image for every role (coordinator, worker, lab, one-shot commands).
#   docker build -t probefleet .
#   docker run --rm probefleet worker --region eu-west --redis rediss://...
# deploy/compose.yaml and deploy/k8s/ use it; docs/deploy.md explains both.

# Node 24 is an LTS line (maintained to April 2028); npm test runs the unit tests and the README's
# first command under Node 24 as well as the Node 20 of the build machine.
ARG NODE_IMAGE=node:24-trixie-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` compiles, and the sources are not here yet.
RUN npm ci --ignore-scripts
COPY tsconfig.json ./
COPY cli cli
COPY contracts contracts
COPY common common
COPY metrics metrics
COPY coordinator coordinator
COPY worker worker
COPY lab lab
COPY regions regions
COPY dashboards/src dashboards/src
# The CLI bundle's build runs `plan validate` of an example plan to make its code cache.
COPY bin bin
COPY examples examples
# Only the shipped code: tsconfig's other folders (tests, benchmarks) are absent.
RUN npm run build

FROM ${NODE_IMAGE} AS runtime
# tini is PID 1: it forwards SIGTERM to node (so a worker drains its jobs and exits 0) and reaps
# the `cold` mode's child processes.
RUN apt-get update \
  && apt-get install -y --no-install-recommends tini \
  && rm -rf /var/lib/apt/lists/*
ENV NODE_ENV=production
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts && npm cache clean --force
# Only what the CLI imports (the test follows its imports from dist/cli/probefleet.js).
COPY bin bin
COPY --from=build /app/dist/cli dist/cli
COPY --from=build /app/dist/coordinator dist/coordinator
COPY --from=build /app/dist/worker dist/worker
COPY --from=build /app/dist/common dist/common
COPY --from=build /app/dist/metrics dist/metrics
COPY --from=build /app/dist/contracts dist/contracts
COPY --from=build /app/dist/lab dist/lab
COPY --from=build /app/dist/regions dist/regions
COPY --from=build /app/dist/dashboards/src dist/dashboards/src
COPY examples examples
COPY regions/delay/nfq-delay.c regions/delay/nfq-delay.c
# The demo's Prometheus loads the alert rules.
COPY dashboards/alerts dashboards/alerts
USER node
# The coordinator's /metrics and /healthz; workers serve /metrics on PROBEFLEET_METRICS_PORT.
EXPOSE 9470 9471
# PROBEFLEET_HEALTH_URL: what the health check asks (default: the coordinator's /healthz);
# deploy/compose.yaml sets it per service.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 CMD ["node", "bin/healthcheck.js"]
ENTRYPOINT ["/usr/bin/tini", "--", "node", "bin/probefleet.js"]
CMD ["coordinator", "--host", "0.0.0.0"]
