#!/usr/bin/env node
// The container health check (Dockerfile HEALTHCHECK): exits 0 when PROBEFLEET_HEALTH_URL
// (default: the coordinator's /healthz on 127.0.0.1:9470) answers 2xx within 4 s, else 1.
// CommonJS, as everything in bin/ is (bin/package.json).
const url = process.env.PROBEFLEET_HEALTH_URL || 'http://127.0.0.1:9470/healthz';

async function check() {
  try {
    const response = await fetch(url, { signal: AbortSignal.timeout(4000) });
    await response.body?.cancel();
    if (!response.ok) {
      process.stderr.write(`healthcheck: ${url} answered ${response.status}\n`);
      process.exit(1);
    }
  } catch (err) {
    process.stderr.write(`healthcheck: ${url}: ${err.cause?.code ?? err.message}\n`);
    process.exit(1);
  }
}

check();
