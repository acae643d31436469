// Egress proxies: which proxy a target's connections go through (the plan's `proxy`, else the
// worker's HTTPS_PROXY / http_proxy / ALL_PROXY / NO_PROXY as curl reads them), and the CONNECT tunnel that
// TimedConnector opens through it, timed as its own phase (`proxy`). Our own CONNECT rather than
// undici's ProxyAgent: every probe's connections (node:http2, raw HTTP/1.1, the tls probe's bare
// handshakes) go through one connector, and its round trip is a phase the ProxyAgent does not show
// (docs/decisions/003-our-own-connect-tunnel.md).
import type net from 'node:net';
import { connect, isIP } from 'node:net';

export interface ProxySettings {
  host: string;
  port: number;
  /** `Proxy-Authorization` from the proxy URL's user:password (references filled in). */
  authorization?: string;
  /** The plan named it (its address is held to the target policy), or the worker's environment did (the operator's). */
  from: 'plan' | 'environment';
  /** The proxy URL without user:password, for messages. */
  shown: string;
}

/** Thrown when the proxy does not open the tunnel; classified as PROXY_REFUSED. */
export class ProxyRefusedError extends Error {
  override name = 'ProxyRefusedError';
  readonly code = 'PROXY_REFUSED';
}

/** The most of a CONNECT answer's head read: a proxy's answer is a status line and a few headers. */
const HEAD_BYTES = 16 * 1024;

/** A proxy URL as settings: http:// (or no scheme, as curl takes `host:port`); any other
 * scheme, and a value that is no URL, is refused (ProxyRefusedError), never bypassed. */
export function proxySettingsOf(value: string, from: ProxySettings['from']): ProxySettings {
  const where = from === 'plan' ? "the target's proxy" : "the proxy of this worker's environment";
  let url: URL;
  let user: string;
  let password: string;
  try {
    url = new URL(/^[a-z][a-z0-9+.-]*:\/\//i.test(value) ? value : `http://${value}`);
    user = decodeURIComponent(url.username);
    password = decodeURIComponent(url.password);
  } catch {
    throw new ProxyRefusedError(`${where} is not a URL (http://host:port)`);
  }
  if (url.protocol !== 'http:')
    throw new ProxyRefusedError(
      `${where}, ${url.protocol}//${url.host}: only http:// proxies are supported (CONNECT over plain TCP)`,
    );
  const authorization = user ? `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` : undefined;
  return {
    host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
    port: Number(url.port) || 80,
    ...(authorization ? { authorization } : {}),
    from,
    shown: `http://${url.host}`,
  };
}

/**
 * The proxy curl would use for `target` with this environment: NO_PROXY (or no_proxy) first,
 * then https_proxy / HTTPS_PROXY for https, http_proxy (lower case only, as curl: HTTP_PROXY can
 * be set by a CGI request's Proxy header) for http, then all_proxy / ALL_PROXY.
 */
export function proxyFromEnvironment(target: URL, env: NodeJS.ProcessEnv): string | undefined {
  const host = target.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
  const noProxy = env.no_proxy ?? env.NO_PROXY;
  if (noProxy && noProxyMatches(host, noProxy)) return undefined;
  const value = target.protocol === 'https:' ? (env.https_proxy ?? env.HTTPS_PROXY) : env.http_proxy;
  return value || env.all_proxy || env.ALL_PROXY || undefined;
}

/** curl's NO_PROXY: `*`, host names matching themselves and their subdomains (a leading dot
 * optional), IP addresses, and CIDR ranges (curl 7.86 and later). */
export function noProxyMatches(host: string, noProxy: string): boolean {
  for (const raw of noProxy.split(',')) {
    const entry = raw.trim().toLowerCase();
    if (!entry) continue;
    if (entry === '*') return true;
    if (entry.includes('/') && isIP(host)) {
      if (inCidr(host, entry)) return true;
      continue;
    }
    const name = entry.replace(/^\./, '').replace(/^\[(.*)\]$/, '$1');
    if (host === name || (!isIP(host) && host.endsWith(`.${name}`))) return true;
  }
  return false;
}

function inCidr(address: string, cidr: string): boolean {
  const [base, bitsText] = cidr.split('/');
  const bits = Number(bitsText);
  const a = addressBits(address);
  const b = addressBits(base.replace(/^\[(.*)\]$/, '$1'));
  if (a === undefined || b === undefined || a.length !== b.length || !(bits >= 0 && bits <= a.length)) return false;
  return a.slice(0, bits) === b.slice(0, bits);
}

function addressBits(address: string): string | undefined {
  if (isIP(address) === 4)
    return address
      .split('.')
      .map((o) => Number(o).toString(2).padStart(8, '0'))
      .join('');
  if (isIP(address) !== 6) return undefined;
  const [head, tail = ''] = address.split('::');
  const parts = (s: string) => (s ? s.split(':') : []);
  const groups = [...parts(head), ...Array(8 - parts(head).length - parts(tail).length).fill('0'), ...parts(tail)];
  return groups.map((g) => Number.parseInt(g, 16).toString(2).padStart(16, '0')).join('');
}

/**
 * Asks the proxy on `socket` for a tunnel to `authority` (host:port) and resolves once it answers
 * 2xx; the bytes after its answer's head, if any, are put back for what runs over the tunnel.
 * Rejects with ProxyRefusedError on another status, a head that is too long, or a closed socket.
 */
export function openTunnel(socket: net.Socket, authority: string, proxy: ProxySettings): Promise<void> {
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0);
    // 'readable' and read(), not 'data': once its listener is gone the socket is back to no mode at
    // all, so what runs over the tunnel (undici, TLS) reads it as a fresh socket.
    const done = (err?: Error) => {
      socket.off('readable', onReadable);
      socket.off('close', onClose);
      socket.off('error', onError);
      if (err) reject(err);
      else resolve();
    };
    const onReadable = () => {
      for (let chunk = socket.read() as Buffer | null; chunk; chunk = socket.read() as Buffer | null)
        head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) {
        if (head.length > HEAD_BYTES)
          done(new ProxyRefusedError(`proxy ${proxy.shown} answered CONNECT with a head over ${HEAD_BYTES} bytes`));
        return;
      }
      const statusLine = head.subarray(0, head.indexOf('\r\n')).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine)?.[1];
      if (!status?.startsWith('2')) {
        const shownStatus = status ?? JSON.stringify(statusLine.slice(0, 40));
        const why =
          status === '407'
            ? ' (it wants credentials: give them in the proxy URL, http://user:${env:PASSWORD}@host:port)'
            : '';
        return done(
          new ProxyRefusedError(`proxy ${proxy.shown} answered CONNECT ${authority} with ${shownStatus}${why}`),
        );
      }
      const rest = head.subarray(end + 4);
      if (rest.length > 0) socket.unshift(rest);
      done();
    };
    const onClose = () =>
      done(new ProxyRefusedError(`proxy ${proxy.shown} closed the connection before answering CONNECT ${authority}`));
    const onError = (err: Error) => done(new ProxyRefusedError(`proxy ${proxy.shown}: ${err.message}`, { cause: err }));
    socket.on('readable', onReadable);
    socket.once('close', onClose);
    socket.once('error', onError);
    socket.write(
      `CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n${proxy.authorization ? `Proxy-Authorization: ${proxy.authorization}\r\n` : ''}\r\n`,
    );
  });
}

/**
 * The proxy a job's connections to `target` go through: the target's `proxy` (a URL; `none`: no
 * proxy whatever the environment says), else the one the worker's environment names for it.
 * Undefined: connect directly. The target's proxy URL has its references filled in already (worker/secrets.ts).
 */
export function proxyOf(
  target: { url: string; proxy?: string },
  env: NodeJS.ProcessEnv = process.env,
): ProxySettings | undefined {
  if (target.proxy === 'none') return undefined;
  if (target.proxy !== undefined) return proxySettingsOf(target.proxy, 'plan');
  const fromEnvironment = proxyFromEnvironment(new URL(target.url), env);
  return fromEnvironment === undefined ? undefined : proxySettingsOf(fromEnvironment, 'environment');
}

/** A TCP connection to the proxy with a tunnel to `authority` open on it, bounded by `timeoutMs`. */
export async function tunnelThrough(
  proxy: ProxySettings,
  proxyAddress: string,
  authority: string,
  timeoutMs: number,
): Promise<net.Socket> {
  const socket = connect({ host: proxyAddress, port: proxy.port, noDelay: true });
  const timer = setTimeout(
    () =>
      socket.destroy(new ProxyRefusedError(`proxy ${proxy.shown}: no tunnel to ${authority} within ${timeoutMs} ms`)),
    timeoutMs,
  );
  try {
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    await openTunnel(socket, authority, proxy);
    return socket;
  } catch (err) {
    socket.destroy();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}
