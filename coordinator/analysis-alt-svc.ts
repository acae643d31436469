// HTTP/3 as servers advertise it: `Alt-Svc: h3=":443"; ma=86400` (RFC 7838, RFC 9114 §3.1.1).
// Every probe that speaks HTTP records the Alt-Svc values it saw (results[].altSvc); here they
// become one info finding per region and target, and the report's table of advertisements.
// probefleet does not speak QUIC: a probe of HTTP/3 itself waits for a Node release with node:quic.
import { finding, type Finding } from '../contracts/findings.js';
import type { ProbeResult } from '../contracts/result.js';
import { deltaSeconds, percentDecoded, portNumber } from '../common/target-values.js';

/** One alternative an Alt-Svc value offers for HTTP/3 (h3, or a draft such as h3-29). */
export interface H3Advertisement {
  region: string;
  target: string;
  /** `h3`, `h3-29`, ... */
  protocol: string;
  /** Host of the alternative; empty: the origin's own host. */
  host: string;
  port: number;
  /** Seconds the client may remember it: `ma`, 86400 when absent (RFC 7838 §3.1). */
  maxAgeSeconds: number;
  /** The Alt-Svc value it came from, and the probes that saw it. */
  value: string;
  probes: string[];
}

const DEFAULT_MAX_AGE_SECONDS = 86_400;
const ALT_VALUE = /^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*=\s*"([^"]*)"((?:\s*;\s*[^;,]*)*)/;

/** Splits an Alt-Svc value at the commas between alternatives (not those inside quotes). */
function alternatives(value: string): string[] {
  return value.match(/(?:[^,"]|"[^"]*")+/g) ?? [];
}

/**
 * The HTTP/3 alternatives of one Alt-Svc value (`clear` and other protocols give none). A value
 * is what a server sent: an alternative that cannot be read (a malformed escape, a port out of
 * range) is left out, and a max age too large to store is the largest delta-seconds there is.
 */
export function parseH3AltSvc(value: string): Omit<H3Advertisement, 'region' | 'target' | 'value' | 'probes'>[] {
  return alternatives(value).flatMap((alt) => {
    const m = ALT_VALUE.exec(alt);
    const protocol = m ? percentDecoded(m[1])?.toLowerCase() : undefined;
    if (!m || !protocol || !/^h3(-\w+)?$/.test(protocol)) return [];
    const authority = /^(.*):(\d+)$/.exec(m[2]);
    const port = authority ? portNumber(authority[2]) : null;
    if (!authority || port === null) return [];
    const ma = /;\s*ma\s*=\s*"?(\d+)"?/i.exec(m[3]);
    return [
      {
        protocol,
        host: authority[1],
        port,
        maxAgeSeconds: (ma && deltaSeconds(ma[1])) ?? DEFAULT_MAX_AGE_SECONDS,
      },
    ];
  });
}

/** Every distinct HTTP/3 advertisement per region and target, with the probes that saw it. */
export function h3Advertisements(results: ProbeResult[]): H3Advertisement[] {
  const found = new Map<string, H3Advertisement>();
  for (const r of results) {
    for (const value of r.altSvc ?? []) {
      for (const alt of parseH3AltSvc(value)) {
        const key = [r.region, r.target, alt.protocol, alt.host, alt.port, alt.maxAgeSeconds].join('\u0000');
        const seen = found.get(key) ?? { region: r.region, target: r.target, ...alt, value, probes: [] };
        if (!seen.probes.includes(r.probe)) seen.probes.push(r.probe);
        found.set(key, seen);
      }
    }
  }
  return [...found.values()];
}

/** H3_ADVERTISED, one per region and target that advertised HTTP/3. */
export function h3Advertised(results: ProbeResult[]): Finding[] {
  const byPlace = new Map<string, H3Advertisement[]>();
  for (const ad of h3Advertisements(results)) {
    const key = `${ad.region}\u0000${ad.target}`;
    byPlace.set(key, [...(byPlace.get(key) ?? []), ad]);
  }
  return [...byPlace.values()].map((ads) => {
    const [first] = ads;
    return finding(
      'H3_ADVERTISED',
      { region: first.region, target: first.target, probe: first.probes[0] },
      `${ads
        .map(
          (a) =>
            `${a.protocol} on ${a.host ? `${a.host}:` : 'port '}${a.port} for ${a.maxAgeSeconds} s (Alt-Svc: ${a.value}; seen by ${a.probes.join(', ')})`,
        )
        .join(
          '; ',
        )}; not measured: probefleet speaks HTTP/1.1 and HTTP/2 (an HTTP/3 probe waits for node:quic in a Node release)`,
      { protocol: first.protocol, port: first.port, maxAgeSeconds: first.maxAgeSeconds, host: first.host },
    );
  });
}
