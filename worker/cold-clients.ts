// The clients of the `cold` reuse mode: one new process per request, the shell loop users write.
// curl by default where it is installed (what that loop usually runs), Node on request (our own
// timed connector in a fresh process, worker/probes/cold-request.ts), or a command the plan names
// (embedded runs only: a worker never runs a command that came from Redis). Each request is
// timed from spawn to exit; curl and Node also report the phases of their one connection.
import { execFile, execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { isIP } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ErrorCode, PhaseTimes, ProbeError, RequestSample } from '../contracts/common.js';
import type { JobTarget } from '../contracts/job.js';
import { JOB_LIMITS } from '../contracts/limits.js';
import type { ColdClientParam, ColdClientUsed } from '../contracts/probes/reuse.js';
import type { ColdRequestInput, ColdRequestOutput } from './probes/cold-request.js';
import { proxyOf } from './http/proxy.js';
import type { TargetAddresses } from './target-addresses.js';

const COLD_REQUEST_SCRIPT = fileURLToPath(new URL('./probes/cold-request.js', import.meta.url));

/** One request in a new process: the sample (its `total` set by the caller), and what it opened. */
export interface ColdOutcome {
  sample: Omit<RequestSample, 'seq'>;
  /** Connections the client opened, as it counted them; undefined when it cannot say (a command). */
  connectionsOpened?: number;
  /** Alt-Svc values the response carried. */
  altSvc: string[];
}

export interface ColdClient {
  used: ColdClientUsed;
  request(signal: AbortSignal): Promise<ColdOutcome>;
  close(): Promise<void>;
}

export class ColdClientRefusedError extends Error {
  override name = 'ColdClientRefusedError';
}

let curlVersion: string | null | undefined;
/** curl's version where it is installed, else null (asked once per process). */
export function installedCurl(): string | null {
  if (curlVersion === undefined) {
    try {
      curlVersion = /^curl (\S+)/.exec(execFileSync('curl', ['--version'], { encoding: 'utf8', timeout: 5000 }))![1];
    } catch {
      curlVersion = null;
    }
  }
  return curlVersion;
}

export interface ColdClientOptions {
  target: JobTarget;
  timeoutMs: number;
  addresses: TargetAddresses;
  /** A command from the plan may run (embedded runs). */
  allowCommand: boolean;
}

export async function coldClientFor(param: ColdClientParam, options: ColdClientOptions): Promise<ColdClient> {
  if (typeof param === 'object') {
    if (!options.allowCommand)
      throw new ColdClientRefusedError(
        `client.command runs only in embedded runs (probefleet run without Redis): a worker never runs a command from a job`,
      );
    return commandClient(param.command, options);
  }
  const curl = installedCurl();
  if (param === 'curl' && !curl) throw new ColdClientRefusedError('client curl: curl is not installed on this worker');
  if (param === 'node' || !curl) return nodeClient(options);
  return curlClient(curl, options);
}

/** Room for a client process to start, beyond its request's timeoutMs, before it is killed. The
 * node client takes 0.15–0.2 s to start on an idle 2-vCPU machine and 0.25–0.45 s beside
 * `stress-ng --cpu 2`; on a busier one, twice a 1 s timeoutMs killed it before its own bound said
 * what the target did. */
const CLIENT_START_MS = 10_000;

function run(
  file: string,
  args: string[],
  stdin: string,
  signal: AbortSignal,
  timeoutMs: number,
): Promise<{ stdout: string; code: number | null; error?: Error }> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      { signal, timeout: timeoutMs + CLIENT_START_MS, maxBuffer: 1 << 20, encoding: 'utf8' },
      (err, stdout) => {
        const code = err ? ((err as { code?: unknown }).code as number | null) : 0;
        resolve({ stdout, code: typeof code === 'number' ? code : null, ...(err ? { error: err } : {}) });
      },
    );
    child.stdin?.on('error', () => {});
    child.stdin?.end(stdin);
  });
}

/** A failed request: the total is set by the caller. */
const failed = (error: ProbeError): ColdOutcome => ({
  sample: { newConnection: false, phases: {}, bodyBytes: 0, error },
  altSvc: [],
});

function spawnError(err: Error | undefined, what: string): ProbeError {
  const name = (err as { code?: unknown } | undefined)?.code;
  if (name === 'ABORT_ERR') return { code: 'DEADLINE_EXCEEDED', message: `${what} stopped: the job's time bound` };
  if (name === 'ENOENT') return { code: 'INVALID_JOB', message: `${what} is not installed here` };
  // `run`'s own bound (the client's bound on its request, and CLIENT_START_MS to start) killed it.
  if ((err as { killed?: boolean } | undefined)?.killed && name === null)
    return {
      code: 'RESPONSE_TIMEOUT',
      message: `${what} gave no answer in timeoutMs and ${CLIENT_START_MS / 1000} s to start: killed`,
    };
  return { code: 'INTERNAL_ERROR', message: `${what} failed: ${err?.message ?? 'no output'}` };
}

function nodeClient(options: ColdClientOptions): ColdClient {
  const input: ColdRequestInput = {
    target: options.target,
    timeoutMs: options.timeoutMs,
    policy: options.addresses.policy.settings,
  };
  return {
    used: { kind: 'node', label: `node ${process.versions.node}` },
    async request(signal) {
      // The input comes on stdin, not in argv: its headers may hold secrets, and argv is visible to `ps`.
      const out = await run(
        process.execPath,
        [COLD_REQUEST_SCRIPT, '-'],
        JSON.stringify(input),
        signal,
        options.timeoutMs,
      );
      if (out.code !== 0) return failed(spawnError(out.error, 'the node client'));
      const { sample, connectionsOpened, altSvc } = JSON.parse(out.stdout) as ColdRequestOutput;
      const { seq: _, ...rest } = sample;
      return { sample: rest, connectionsOpened, altSvc };
    },
    close: async () => {},
  };
}

/** A curl config file value: double-quoted, with curl's escapes. */
const curlValue = (value: string) => `"${value.replace(/\\/g, '\\\\').replace(/"/g, '\\"')}"`;

async function curlClient(version: string, options: ColdClientOptions): Promise<ColdClient> {
  const { target, timeoutMs, addresses } = options;
  const url = new URL(target.url);
  const secure = url.protocol === 'https:';
  const port = Number(url.port) || (secure ? 443 : 80);
  const dir = await mkdtemp(path.join(tmpdir(), 'probefleet-curl-'));
  const config = [
    `url = ${curlValue(target.url)}`,
    'output = "/dev/null"',
    'silent',
    'show-error',
    `max-time = ${timeoutMs / 1000}`,
    `max-filesize = ${JOB_LIMITS.responseBytes}`,
    'write-out = "%{json}\\n%{header_json}"',
    ...Object.entries(target.headers ?? {}).map(([name, value]) => `header = ${curlValue(`${name}: ${value}`)}`),
  ];
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  if (!isIP(host)) {
    // curl resolves names itself: pin the name to the address the policy allowed, as our own
    // connector connects to it. The resolve phase is then not curl's lookup.
    const address = await addresses.resolve(host);
    config.push(`resolve = ${curlValue(`${host}:${port}:${address.includes(':') ? `[${address}]` : address}`)}`);
  }
  // The proxy our own connector would use, tunnelled as ours is; none stops curl reading the environment's.
  const proxy = proxyOf(target);
  if (proxy) {
    config.push(
      `proxy = ${curlValue(`http://${proxy.host.includes(':') ? `[${proxy.host}]` : proxy.host}:${proxy.port}`)}`,
      'proxytunnel',
    );
    if (proxy.authorization) config.push(`proxy-header = ${curlValue(`Proxy-Authorization: ${proxy.authorization}`)}`);
  } else config.push('noproxy = "*"');
  if (target.method) config.push(`request = ${curlValue(target.method)}`);
  if (target.body !== undefined) {
    // From a file, as it is: inline, curl would read @ and strip newlines.
    const bodyFile = path.join(dir, 'body');
    await writeFile(bodyFile, target.body);
    config.push(`data-binary = ${curlValue(`@${bodyFile}`)}`);
  }
  if (target.tls?.insecure) config.push('insecure');
  if (target.tls?.caPem) {
    const caFile = path.join(dir, 'ca.pem');
    await writeFile(caFile, target.tls.caPem);
    config.push(`cacert = ${curlValue(caFile)}`);
  }
  if (target.tls?.cert && target.tls.key) {
    // Files only this user reads, removed with the directory when the client closes.
    await writeFile(path.join(dir, 'client.pem'), target.tls.cert, { mode: 0o600 });
    await writeFile(path.join(dir, 'client.key'), target.tls.key, { mode: 0o600 });
    config.push(
      `cert = ${curlValue(path.join(dir, 'client.pem'))}`,
      `key = ${curlValue(path.join(dir, 'client.key'))}`,
    );
    if (target.tls.passphrase) config.push(`pass = ${curlValue(target.tls.passphrase)}`);
  }
  if (target.tls?.servername) {
    // curl sends SNI from the URL's host: ask for the name, connect to the target's address.
    const named = new URL(target.url);
    named.hostname = target.tls.servername;
    config[0] = `url = ${curlValue(named.href)}`;
    config.push(`connect-to = ${curlValue(`${target.tls.servername}:${port}:${url.hostname}:${port}`)}`);
    config.push(`header = ${curlValue(`host: ${url.host}`)}`);
  }
  // Options on stdin (-K -), never in argv: headers may hold secrets, and argv is visible to `ps`.
  const stdin = `${config.join('\n')}\n`;
  return {
    used: { kind: 'curl', label: `curl ${version}` },
    async request(signal) {
      const out = await run('curl', ['-K', '-'], stdin, signal, timeoutMs);
      const [stats, headers] = splitCurlOutput(out.stdout);
      if (!stats) return failed(spawnError(out.error, 'curl'));
      return curlOutcome(stats, headers, secure);
    },
    close: () => rm(dir, { recursive: true, force: true }),
  };
}

interface CurlStats {
  exitcode: number;
  errormsg: string | null;
  http_code: number;
  num_connects: number;
  size_download: number;
  time_namelookup: number;
  time_connect: number;
  time_appconnect: number;
  time_pretransfer: number;
  time_starttransfer: number;
  time_total: number;
}

/** `%{json}` then `%{header_json}`, each a JSON object. */
function splitCurlOutput(stdout: string): [CurlStats | undefined, Record<string, string[]>] {
  const newline = stdout.indexOf('\n');
  try {
    const stats = JSON.parse(newline < 0 ? stdout : stdout.slice(0, newline)) as CurlStats;
    const headers = newline < 0 ? {} : (JSON.parse(stdout.slice(newline + 1) || '{}') as Record<string, string[]>);
    return [stats, headers];
  } catch {
    return [undefined, {}];
  }
}

/** curl's exit codes (man curl, "EXIT CODES") in our closed set. */
const CURL_EXIT: Record<number, ErrorCode> = {
  3: 'INVALID_JOB',
  6: 'DNS_FAILED',
  7: 'CONNECTION_REFUSED',
  8: 'HTTP_PROTOCOL_ERROR',
  18: 'SOCKET_CLOSED',
  35: 'TLS_HANDSHAKE_FAILED',
  52: 'SOCKET_CLOSED',
  56: 'CONNECTION_RESET',
  60: 'TLS_CERT_UNTRUSTED',
  63: 'RESPONSE_TOO_LARGE',
  100: 'HTTP_PROTOCOL_ERROR',
};

export function curlError(
  stats: Pick<CurlStats, 'exitcode' | 'errormsg' | 'time_connect' | 'time_starttransfer'>,
): ProbeError {
  const message = `curl exit ${stats.exitcode}: ${stats.errormsg ?? 'no message'}`;
  let code: ErrorCode = CURL_EXIT[stats.exitcode] ?? 'HTTP_PROTOCOL_ERROR';
  // --max-time bounds the whole transfer: where it was when time ran out says which timeout it was.
  if (stats.exitcode === 28)
    code =
      stats.time_starttransfer > 0 ? 'BODY_TIMEOUT' : stats.time_connect > 0 ? 'RESPONSE_TIMEOUT' : 'CONNECT_TIMEOUT';
  if (stats.exitcode === 60 && /expired/i.test(stats.errormsg ?? '')) code = 'TLS_CERT_EXPIRED';
  // curl 7.88 stops a head over 300 KiB as a receive error (56), curl 8 as CURLE_TOO_LARGE (100).
  if ((stats.exitcode === 56 || stats.exitcode === 100) && /too large response headers/i.test(stats.errormsg ?? ''))
    code = 'RESPONSE_HEADERS_TOO_LARGE';
  if (stats.exitcode === 60 && /subject name|does not match/i.test(stats.errormsg ?? ''))
    code = 'TLS_HOSTNAME_MISMATCH';
  return { code, message };
}

function curlOutcome(s: CurlStats, headers: Record<string, string[]>, secure: boolean): ColdOutcome {
  const altSvc = headers['alt-svc'] ?? [];
  if (s.exitcode !== 0) {
    return {
      sample: {
        newConnection: s.num_connects > 0,
        phases: {},
        bodyBytes: 0,
        ...(s.http_code ? { status: s.http_code } : {}),
        error: curlError(s),
      },
      connectionsOpened: s.num_connects,
      altSvc,
    };
  }
  const ms = (seconds: number) => seconds * 1000;
  const phases: PhaseTimes = {
    resolve: ms(s.time_namelookup),
    connect: ms(s.time_connect - s.time_namelookup),
    ...(secure ? { tls: ms(s.time_appconnect - s.time_connect) } : {}),
    processing: ms(s.time_starttransfer - s.time_pretransfer),
    transfer: ms(s.time_total - s.time_starttransfer),
  };
  return {
    sample: {
      status: s.http_code,
      newConnection: s.num_connects > 0,
      phases,
      bodyBytes: s.size_download,
      serverClosed: (headers.connection ?? []).some((v) => /\bclose\b/i.test(v)),
    },
    connectionsOpened: s.num_connects,
    altSvc,
  };
}

/** A command from the plan, `{url}` replaced by the target's URL; it succeeded if it exited 0. */
function commandClient(argv: string[], options: ColdClientOptions): ColdClient {
  const [file, ...args] = argv.map((a) => a.replaceAll('{url}', options.target.url));
  return {
    used: { kind: 'command', label: path.basename(argv[0]) },
    async request(signal) {
      const out = await run(file, args, '', signal, options.timeoutMs);
      if (out.code === 0) return { sample: { newConnection: true, phases: {}, bodyBytes: 0 }, altSvc: [] };
      return failed(
        out.code === null
          ? spawnError(out.error, `command ${argv[0]}`)
          : { code: 'HTTP_PROTOCOL_ERROR', message: `command ${argv[0]} exited ${out.code}` },
      );
    },
    close: async () => {},
  };
}
