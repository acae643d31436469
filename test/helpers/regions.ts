// Tests that need emulated regions (root, network namespaces, the NFQUEUE helper's tools):
// outside CI they skip with the harness's own message and what to run; under CI=true they run
// and fail loudly with that message.
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
