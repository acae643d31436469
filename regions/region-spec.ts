// Regions on the command line: `NAME=RTT[,RATE]`, e.g. `eu-west=20ms` or `ap-south=160ms,1MB/s`.
import type { RegionSpec } from './harness.js';

export class RegionSpecError extends Error {
  override name = 'RegionSpecError';
}

const RTT_UNITS: Record<string, number> = { '': 1, ms: 1, s: 1000 };
/** Bytes per second per unit; MB/s and friends are decimal, like tc's. */
const RATE_UNITS: Record<string, number> = {
  'b/s': 1,
  'kb/s': 1e3,
  'mb/s': 1e6,
  'gb/s': 1e9,
  bit: 1 / 8,
  kbit: 1e3 / 8,
  mbit: 1e6 / 8,
  gbit: 1e9 / 8,
};

export function parseRegionSpec(text: string): RegionSpec {
  const match = /^([^=]+)=([\d.]+)([a-z]*)(?:,([\d.]+)\s*([a-z/]+))?$/i.exec(text.trim());
  if (!match)
    throw new RegionSpecError(`region "${text}": expected NAME=RTT[,RATE], e.g. eu-west=20ms or ap-south=160ms,1MB/s`);
  const [, name, rtt, rttUnit, rate, rateUnit] = match;
  const rttScale = RTT_UNITS[rttUnit.toLowerCase()];
  if (rttScale === undefined || Number.isNaN(Number(rtt)))
    throw new RegionSpecError(`region "${text}": RTT "${rtt}${rttUnit}" is not a time (use ms or s)`);
  const spec: RegionSpec = { name, rttMs: Number(rtt) * rttScale };
  if (rate !== undefined) {
    const rateScale = RATE_UNITS[rateUnit.toLowerCase()];
    if (rateScale === undefined || Number.isNaN(Number(rate))) {
      throw new RegionSpecError(
        `region "${text}": rate "${rate}${rateUnit}" is not a rate (use B/s, kB/s, MB/s, GB/s, kbit, mbit or gbit)`,
      );
    }
    spec.rateBytesPerSecond = Number(rate) * rateScale;
  }
  return spec;
}

/** `1 MB/s`, `250 kB/s`: how the harness reports a rate. */
export function formatRate(bytesPerSecond: number | undefined): string {
  if (bytesPerSecond === undefined) return '-';
  for (const [unit, scale] of [
    ['GB/s', 1e9],
    ['MB/s', 1e6],
    ['kB/s', 1e3],
  ] as const) {
    if (bytesPerSecond >= scale) return `${+(bytesPerSecond / scale).toFixed(2)} ${unit}`;
  }
  return `${bytesPerSecond} B/s`;
}
