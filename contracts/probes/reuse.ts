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
  question: 'what does a new connection cost compared with a reused one?',
  jobs: '`reused`: one keep-alive connection; `new`: `Connection: close` on every request, so each opens a connection; `cold`: a new client process per request (the shell-loop anti-pattern), timed from spawn to exit: curl by default where installed (`client`), and every output says which client ran',
  findings: {
    SERVER_CLOSES_EVERY_CONNECTION: {
      severity: 'warning',
      title: 'The server closes the connection after every response',
      situation: 'Server answers every request with Connection: close',
      advice:
        'Enable keep-alive on the server (or the proxy in front of it); clients cannot reuse connections until it does',
      when: 'reuse: in `reused` mode every response said `Connection: close` and each request opened a connection; load: with keep-alive (`reused`, `h2`) at least 90% of the answered requests opened a connection of their own',
    },
    NAGLE_DELAYED_ACK_STALL: {
      severity: 'warning',
      title: 'Reused requests stall about 40 ms (Nagle meets delayed ACK)',
      situation: 'Server writes headers and body in separate packets with Nagle on',
      advice: 'Set TCP_NODELAY on the server socket, or write headers and body in one write',
      when: "from the `reused` job alone: at least 80% of the requests after the first take 35-220 ms (the delayed-ACK timer), tightly clustered (middle half within 10 ms or 30% of the median), with bodies of 64 KiB or less, while a control was 20 ms faster: the first request (a fresh connection) or the `new` mode's median",
    },
  },
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
