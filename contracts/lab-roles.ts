// The lab target's servers by role, as a plan names them: `url: lab:keepalive/nagle` is the
// keep-alive server's /nagle, wherever the lab listens this time. The entry point that knows
// where the lab is (`run --lab`, `run --lab-at`, `regions run`, `schedule add --lab-at`) turns
// such URLs into real ones before the plan is split (coordinator/lab-targets.ts), so jobs, workers
// and their target policy only ever see http:// and https:// URLs.
import type { Scheme } from './probes/define.js';

/** Every lab server's role and scheme; lab/index.ts has one server per role. */
export const LAB_ROLES = {
  keepalive: 'http',
  close: 'http',
  https: 'https',
  h2: 'https',
  h2c: 'http',
  tls12: 'https',
  mtls: 'https',
  'no-alpn': 'https',
  expired: 'https',
  'self-signed': 'https',
  'wrong-host': 'https',
  'no-resume': 'https',
  'slow-tls': 'https',
  refused: 'http',
  'reset-headers': 'http',
  silent: 'http',
  trickle: 'http',
  'huge-body': 'http',
  'bad-status': 'http',
  'huge-headers': 'http',
  'tls-reset': 'https',
  'h2-goaway': 'https',
  'h2-rst': 'https',
  'decompression-bomb': 'http',
  'h2-push-reset': 'http',
  'echo-headers': 'http',
  'escape-cert': 'https',
} as const satisfies Record<string, Scheme>;
export type LabRole = keyof typeof LAB_ROLES;

/** Where a lab listens: one host, a port per server. */
export interface LabAddress {
  host: string;
  ports: Record<LabRole, number>;
}

export const LAB_URL_PREFIX = 'lab:';
const LAB_URL = /^lab:([a-z0-9-]+)(\/[^\s#]*)?$/;

export function isLabUrl(url: string): boolean {
  return url.startsWith(LAB_URL_PREFIX);
}

/** `lab:ROLE[/path?query]` as its role and path, or a sentence saying what is wrong with it. */
export function parseLabUrl(url: string): { role: LabRole; path: string } | { problem: string } {
  const match = LAB_URL.exec(url);
  if (!match) return { problem: `not a lab URL: "${url}" (lab:SERVER/path, e.g. lab:keepalive/)` };
  const role = match[1];
  if (!Object.hasOwn(LAB_ROLES, role))
    return { problem: `unknown lab server "${role}" (lab servers: ${Object.keys(LAB_ROLES).join(', ')})` };
  return { role: role as LabRole, path: match[2] ?? '/' };
}

/** The real URL of a lab URL at this address. */
export function resolveLabUrl(url: string, lab: LabAddress): string {
  const parsed = parseLabUrl(url);
  if ('problem' in parsed) throw new Error(parsed.problem);
  const host = lab.host.includes(':') ? `[${lab.host}]` : lab.host;
  return `${LAB_ROLES[parsed.role]}://${host}:${lab.ports[parsed.role]}${parsed.path}`;
}
