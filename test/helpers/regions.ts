// Tests that need emulated regions (root, network namespaces, the NFQUEUE helper's tools):
// outside CI they skip with the harness's own message and what to run; under CI=true they run
// and fail loudly with that message.
import assert from 'node:assert/strict';
import type { TestContext } from 'node:test';
import type { Regions } from '../../regions/harness.js';
import { checkNfqueueSupported, checkRegionsSupported, RegionsUnavailableError } from '../../regions/preflight.js';

export function regionsSkipReason(): string | false {
  if (process.env.CI === 'true') return false;
  try {
    checkRegionsSupported();
    checkNfqueueSupported();
    return false;
  } catch (err) {
    if (!(err instanceof RegionsUnavailableError)) throw err;
    return `${err.message} (skipped outside CI; as root: bash test/services/ensure.sh && npm test)`;
  }
}

/** The connect times curl reports (ms) for `count` connects in a row from a region to `url`
 * (`Connection: close`: each transfer opens its own connection), in one curl process at the
 * regions' real-time priority. */
export async function curlConnects(
  regions: Regions,
  region: string,
  url: string,
  count: number,
  bounds: { connectTimeoutSeconds: number; timeoutMs: number },
): Promise<number[]> {
  const out = await regions.exec(
    regions.region(region).namespace,
    'curl',
    [
      '-sS',
      '--connect-timeout',
      String(bounds.connectTimeoutSeconds),
      '-H',
      'Connection: close',
      '-w',
      '%{time_connect}\\n',
      ...Array.from({ length: count }, () => ['-o', '/dev/null', url]).flat(),
    ],
    { realtime: true, timeoutMs: bounds.timeoutMs },
  );
  return out
    .trim()
    .split('\n')
    .map((line) => Number(line) * 1000);
}

/**
 * Runs a measurement with its assertions (`attempt(false)`); if an assertion fails, once more on a
 * fresh measurement (`attempt(true)`), saying so in the test's diagnostics. The regions' processes
 * run at a real-time priority, so the tests' own load cannot delay them, but on a shared 2-vCPU VM a
 * stall of the whole machine (its host's other guests, the kernel's own work) can: once it put
 * every new connection of one job 3–6 ms late, and once six consecutive connects 16–200 ms late,
 * in runs whose other figures were exact. A measurement that is wrong fails both times.
 */
export async function measuredTwice(t: TestContext, attempt: (again: boolean) => Promise<void> | void): Promise<void> {
  try {
    await attempt(false);
  } catch (err) {
    if (!(err instanceof assert.AssertionError)) throw err;
    t.diagnostic(`first measurement disturbed, measuring again: ${err.message.split('\n')[0]}`);
    await attempt(true);
  }
}
