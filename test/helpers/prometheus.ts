// Prometheus, the Pushgateway and promtool for tests (Debian packages prometheus and
// prometheus-pushgateway, installed by test/services/ensure.sh), started by
// common/prometheus-server.ts on free loopback ports. Outside CI a missing binary skips the tests
// that need it, with what to run; under CI=true they fail loudly.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { PROMETHEUS_BINARIES } from '../../common/prometheus-server.js';

export {
  PROMETHEUS_BINARIES,
  startPrometheus,
  startPushgateway,
  type Prometheus,
  type PromSample,
  type Pushgateway,
} from '../../common/prometheus-server.js';

export function onPath(command: string): boolean {
  try {
    execFileSync('sh', ['-c', `command -v ${command}`], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** Why Prometheus-backed tests cannot run, or false. */
export const prometheusMissing: string | false = (() => {
  const missing = Object.values(PROMETHEUS_BINARIES).filter((b) => !onPath(b));
  return missing.length === 0
    ? false
    : `${missing.join(', ')} not found: run \`bash test/services/ensure.sh\` as root (installs Debian's prometheus and prometheus-pushgateway)`;
})();

/** Test options: skip outside CI when a binary is missing (under CI the test runs and fails). */
export const needsPrometheus = { skip: process.env.CI === 'true' ? false : prometheusMissing };

export function requirePrometheus(): void {
  if (prometheusMissing) assert.fail(prometheusMissing);
}
