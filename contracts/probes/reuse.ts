// The `reuse` probe: what does a new connection cost compared with a reused one?
import { z } from 'zod';
import { distinct, requestSampleSchema } from '../common.js';
import { defineProbe, EVERY_REQUEST_SETTING, schemeOf, sequential } from './define.js';

export const REUSE_MODES = ['reused', 'new', 'cold'] as const;

/** The client of the `cold` mode: `auto` is curl where the worker has it, else node. */
export const coldClientSchema = z.union([
  z.enum(['auto', 'curl', 'node']),
  /** A command of your own, `{url}` replaced by the target's URL; embedded runs only. */
  z.strictObject({ command: z.array(z.string().min(1)).min(1).max(64) }),
]);
export type ColdClientParam = z.output<typeof coldClientSchema>;

/** The client that ran the `cold` requests, as every output names it. */
export const coldClientUsedSchema = z.strictObject({
  kind: z.enum(['curl', 'node', 'command']),
  /** "curl 7.88.1", "node 20.20.2", or the command's name. */
  label: z.string(),
});
export type ColdClientUsed = z.infer<typeof coldClientUsedSchema>;

export const reuseProbe = defineProbe({
  kind: 'reuse',
  summary: 'N sequential requests over one kept-alive connection, a new connection each, or a new client process each',
  params: z.strictObject({
    /** Requests per mode. */
    requests: z.int().min(1).max(10_000).default(100),
    /** `reused`: one keep-alive connection; `new`: a new connection per request;
     * `cold`: a new client process per request (the shell-loop anti-pattern). */
    modes: distinct(z.array(z.enum(REUSE_MODES)).min(1), 'mode').default(['reused', 'new']),
    /** Per-request time bound. */
    timeoutMs: z.int().min(1).max(120_000).default(10_000),
    /** Offer the previous TLS session on each new connection (resumed handshakes). */
    tlsResume: z.boolean().default(false),
    /** `cold`: which client runs each request in its own process. */
    client: coldClientSchema.default('auto'),
  }),
  variant: z.strictObject({
    mode: z.enum(REUSE_MODES),
    scheme: z.enum(['http', 'https']),
  }),
  details: z.strictObject({
    samples: z.array(requestSampleSchema),
    /** `cold` only: the client that ran each request in its own process. */
    client: coldClientUsedSchema.optional(),
  }),
  request: (params) => {
    if (!params.modes.includes('cold')) return EVERY_REQUEST_SETTING;
    const command = typeof params.client === 'object';
    return {
      body: !command,
      checks: 'status',
      why: command
        ? 'a command of your own gets the URL only, and reports no response'
        : 'a cold client process reports its status, not its headers or body',
    };
  },
  variants: (params, target) => params.modes.map((mode) => ({ mode, scheme: schemeOf(target.url) })),
  demands: (params) => sequential({ value: params.requests, param: 'requests', how: `${params.requests} requests` }),
});
