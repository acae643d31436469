// Regions on the command line: `NAME=RTT[,RATE][,v6=RTT][,loss=P%[/P%]][,jitter=TIME][,seed=N]`,
// e.g. `eu-west=20ms`, `ap-south=160ms,1MB/s`, `sa-east=120ms,loss=2%,jitter=10ms,seed=7`, or
// `dual=20ms,v6=35ms` (IPv6 with a round trip of its own).
import type { RegionSpec } from './harness.js';

export class RegionSpecError extends Error {
  override name = 'RegionSpecError';
}

export const REGION_SPEC_SYNTAX = 'NAME=RTT[,RATE][,v6=RTT][,loss=P%[/P%]][,jitter=TIME][,seed=N]';

const TIME_UNITS: Record<string, number> = { '': 1, ms: 1, s: 1000 };
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
const NUMBER = '(\\d+(?:\\.\\d+)?)';

function parseTime(text: string, what: string, spec: string): number {
  const match = new RegExp(`^${NUMBER}([a-z]*)$`, 'i').exec(text);
  const scale = match ? TIME_UNITS[match[2].toLowerCase()] : undefined;
  if (!match || scale === undefined)
    throw new RegionSpecError(`region "${spec}": ${what} "${text}" is not a time (use ms or s)`);
  return Number(match[1]) * scale;
}

function parseRate(text: string, spec: string): number {
  const match = new RegExp(`^${NUMBER}\\s*([a-z/]+)$`, 'i').exec(text);
  const scale = match ? RATE_UNITS[match[2].toLowerCase()] : undefined;
  if (!match || scale === undefined) {
    throw new RegionSpecError(
      `region "${spec}": rate "${text}" is not a rate (use B/s, kB/s, MB/s, GB/s, kbit, mbit or gbit)`,
    );
  }
  return Number(match[1]) * scale;
}

/** `2%` both ways, or `2%/0.5%` up (region to target) and down (target to region). */
function parseLoss(text: string, spec: string): { up: number; down: number } {
  const match = new RegExp(`^${NUMBER}%(?:/${NUMBER}%)?$`).exec(text);
  if (!match)
    throw new RegionSpecError(
      `region "${spec}": loss "${text}" is not a percentage (loss=1% both ways, or loss=1%/0% up/down)`,
    );
  const up = Number(match[1]);
  return { up, down: match[2] === undefined ? up : Number(match[2]) };
}

function parseSeed(text: string, spec: string): number {
  if (!/^\d{1,10}$/.test(text))
    throw new RegionSpecError(`region "${spec}": seed "${text}" is not a whole number (0..4294967295)`);
  return Number(text);
}

const OPTIONS = ['v6', 'loss', 'jitter', 'seed'] as const;

export function parseRegionSpec(text: string): RegionSpec {
  const spec = text.trim();
  const match = /^([^=,]+)=([^,]+)((?:,[^,]*)*)$/.exec(spec);
  if (!match)
    throw new RegionSpecError(
      `region "${text}": expected ${REGION_SPEC_SYNTAX}, e.g. eu-west=20ms, ap-south=160ms,1MB/s, dual=20ms,v6=35ms or sa-east=120ms,loss=2%,jitter=10ms`,
    );
  const [, name, rtt, rest] = match;
  const region: RegionSpec = { name, rttMs: parseTime(rtt, 'RTT', spec) };
  const seen = new Set<string>();
  for (const [index, item] of rest.split(',').slice(1).entries()) {
    const option = /^([a-z][a-z0-9]*)=(.*)$/i.exec(item);
    if (!option) {
      if (index > 0 || item === '')
        throw new RegionSpecError(
          `region "${spec}": "${item}" is neither a rate (right after the RTT) nor one of ${OPTIONS.map((o) => `${o}=`).join(', ')}`,
        );
      region.rateBytesPerSecond = parseRate(item, spec);
      continue;
    }
    const [, key, value] = option;
    if (!(OPTIONS as readonly string[]).includes(key))
      throw new RegionSpecError(`region "${spec}": unknown option "${key}=" (known: ${OPTIONS.join(', ')})`);
    if (seen.has(key)) throw new RegionSpecError(`region "${spec}": "${key}=" is given twice`);
    seen.add(key);
    if (key === 'v6') region.ipv6RttMs = parseTime(value, 'IPv6 RTT', spec);
    else if (key === 'loss') region.lossPercent = parseLoss(value, spec);
    else if (key === 'jitter') region.jitterMs = parseTime(value, 'jitter', spec);
    else region.seed = parseSeed(value, spec);
  }
  return region;
}

/** `20 ms`, or `20 ms, IPv6 35 ms` for a region whose IPv6 round trip is another: how the harness reports RTTs. */
export function formatRtt(region: Pick<RegionSpec, 'rttMs' | 'ipv6RttMs'>): string {
  const v6 = region.ipv6RttMs ?? region.rttMs;
  return v6 === region.rttMs ? `${region.rttMs} ms` : `${region.rttMs} ms, IPv6 ${v6} ms`;
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

/** `2% / 0%`, or `-` for a link that loses nothing. */
export function formatLoss(loss: RegionSpec['lossPercent']): string {
  return loss && (loss.up > 0 || loss.down > 0) ? `${loss.up}% / ${loss.down}%` : '-';
}
