// The catalogue of findings: named, documented diagnoses. A probe or the run analysis
// emits a finding by code; its title and advice come from here, so the decision table
// and the docs never drift from the code.
import { z } from 'zod';
import { nameSchema, SEVERITIES, type Severity } from './common.js';

interface FindingSpec {
  severity: Severity;
  /** One line: what was seen. */
  title: string;
  /** The situation column of the decision table. */
  situation: string;
  /** What to do about it. */
  advice: string;
}

export const FINDINGS = {
  SERVER_CLOSES_EVERY_CONNECTION: {
    severity: 'warning',
    title: 'The server closes the connection after every response',
    situation: 'Server answers every request with Connection: close',
    advice: 'Enable keep-alive on the server (or the proxy in front of it); clients cannot reuse connections until it does',
  },
  NAGLE_DELAYED_ACK_STALL: {
    severity: 'warning',
    title: 'Reused requests stall about 40 ms (Nagle meets delayed ACK)',
    situation: 'Server writes headers and body in separate packets with Nagle on',
    advice: 'Set TCP_NODELAY on the server socket, or write headers and body in one write',
  },
} as const satisfies Record<string, FindingSpec>;

export type FindingCode = keyof typeof FINDINGS;
export const FINDING_CODES = Object.keys(FINDINGS) as [FindingCode, ...FindingCode[]];

export const findingSchema = z.strictObject({
  code: z.enum(FINDING_CODES),
  severity: z.enum(SEVERITIES),
  region: nameSchema,
  target: nameSchema,
  probe: z.string(),
  /** A sentence with the numbers from this run that support the diagnosis. */
  evidence: z.string(),
  /** The same numbers, machine-readable. */
  data: z.record(z.string(), z.union([z.number(), z.string(), z.boolean()])).default({}),
});
export type Finding = z.infer<typeof findingSchema>;

/** Builds a finding with the catalogue's severity. */
export function finding(
  code: FindingCode,
  where: { region: string; target: string; probe: string },
  evidence: string,
  data: Finding['data'] = {},
): Finding {
  return { code, severity: FINDINGS[code].severity, ...where, evidence, data };
}
