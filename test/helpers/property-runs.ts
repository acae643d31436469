// How many cases each property test tries: a bounded number in `npm test`, many more with
// `npm run test:properties` (PROBEFLEET_PROPERTY_RUNS=20000), and a seed to replay a failure.
export const PROPERTY_RUNS = Number(process.env.PROBEFLEET_PROPERTY_RUNS) || 200;

/** fast-check's parameters for every property test. */
export const propertyParams = (runs = PROPERTY_RUNS) => ({
  numRuns: runs,
  ...(process.env.PROBEFLEET_PROPERTY_SEED ? { seed: Number(process.env.PROBEFLEET_PROPERTY_SEED) } : {}),
});
