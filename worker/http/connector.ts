// A connector for undici that opens every socket itself, so each connection's resolve,
// TCP connect and TLS handshake are timed separately (undici's diagnostics channels only
// report "connected", after both). Connections are counted here, at the socket layer.
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import tls from 'node:tls';
import diagnostics from 'node:diagnostics_channel';
import type { buildConnector } from 'undici';
import { lookup } from 'node:dns/promises';
import type { PhaseTimes } from '../../contracts/common.js';
import type { JobTls } from '../../contracts/job.js';
import { openTunnel, ProxyRefusedError, type ProxySettings } from './proxy.js';
import { TargetRefusedError, type AddressResolver } from '../target-policy.js';

/** Raw timestamps (performance.now(), ms) of one connection; durations are derived later. */
export interface ConnectionTimeline {
  /** 1-based, in opening order. */
  id: number;
  start: number;
  /** After DNS; absent when the host was an IP literal (no lookup happened). */
  resolved?: number;
  connected?: number;
  /** Through a proxy: when the proxy answered CONNECT (the tunnel is open). */
  tunneled?: number;
  /** After the TLS handshake; https only. */
  secured?: number;
  remoteAddress?: string;
  tls?: { version: string | null; alpn: string | false; cipher: string; resumed: boolean };
  /** When the first TLS session (ticket or id) arrived on this connection; only kept with `resumeTlsSessions`. */
  sessionReceived?: number;
  /** A TLS alert that ended the connection after the handshake (TLS 1.3's certificate_required
   * comes on the first read): the HTTP client sees only a closed socket, this says why. */
  tlsAlert?: Error;
}

export interface ConnectorOptions {
  tls?: JobTls;
  /** Offer the previous TLS session on the next connection (session resumption). */
  resumeTlsSessions: boolean;
  /** ALPN protocols offered on https. */
  alpn: string[];
  /** Bound on resolve + connect + handshake. */
  timeoutMs: number;
  /** Offer and accept only this TLS version; Node's defaults (1.2 to 1.3) when absent. */
  tlsVersion?: tls.SecureVersion;
  /** Decides on, and gives, the address each connection goes to. */
  policy: AddressResolver;
  /** Connect through this proxy (a CONNECT tunnel to the address the policy allowed). */
  proxy?: ProxySettings;
}

export class ConnectError extends Error {
  override name = 'ConnectError';
  constructor(
    message: string,
    readonly code: string,
    readonly phase: 'resolve' | 'connect' | 'proxy' | 'tls',
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

type UndiciConnect = buildConnector.connector;

/** When undici last wrote request headers on a socket (`undici:client:sendHeaders`). */
export interface RequestSent {
  timeline: ConnectionTimeline;
  at: number;
}

const owners = new WeakMap<net.Socket, TimedConnector>();
diagnostics.subscribe('undici:client:sendHeaders', (message) => {
  const { socket } = message as { socket: net.Socket };
  owners.get(socket)?.noteRequestSent(socket, performance.now());
});

/**
 * The time bound of one connection's resolve, connect and handshake: a plain timer, cleared once
 * the connection is up or has failed. (AbortSignal.timeout, a signal registered for finalization
 * per connection, costs a one-request job a measurable share of its CPU: bench/README.md, "Per job".)
 * Unref'd, as AbortSignal.timeout's is: the socket being opened is what keeps the process up.
 */
class ConnectDeadline {
  expired = false;
  /** Told when the bound is reached: the step waiting then fails. */
  onExpiry: (() => void) | undefined;
  private readonly timer: NodeJS.Timeout;

  constructor(ms: number) {
    this.timer = setTimeout(() => {
      this.expired = true;
      this.onExpiry?.();
    }, ms).unref();
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}

/** Opens and times connections for one client; `connections` lists every one it opened. */
export class TimedConnector {
  readonly connections: ConnectionTimeline[] = [];
  private readonly timelines = new WeakMap<net.Socket, ConnectionTimeline>();
  /** Each connection's TCP socket and its bytesRead once ready (after the TLS handshake on https). */
  private readonly tcp = new WeakMap<ConnectionTimeline, { socket: net.Socket; readyBytes: number }>();
  private tlsSession: Buffer | undefined;
  /** The last request written on one of this connector's sockets. */
  lastRequestSent: RequestSent | undefined;

  constructor(private readonly options: ConnectorOptions) {}

  /** The function undici's Client/Pool take as `connect`. */
  readonly connect: UndiciConnect = (opts, callback) => {
    this.open(
      opts.hostname,
      Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80),
      opts.protocol === 'https:',
    ).then(
      (socket) => callback(null, socket),
      (err: Error) => callback(err, null),
    );
  };

  /**
   * Bytes read from a connection's TCP socket since it was ready: HTTP bytes on http, TLS records
   * on https (TLS 1.3 session tickets that arrive after the handshake included).
   */
  bytesReadOn(timeline: ConnectionTimeline): number {
    const tcp = this.tcp.get(timeline);
    return tcp ? tcp.socket.bytesRead - tcp.readyBytes : 0;
  }

  /** A session to offer on the next connection is kept (`resumeTlsSessions`). */
  get hasTlsSession(): boolean {
    return this.tlsSession !== undefined;
  }

  /** The next connection makes a full handshake; its own session is kept for the one after. */
  forgetTlsSession(): void {
    this.tlsSession = undefined;
  }

  noteRequestSent(socket: net.Socket, at: number): void {
    const timeline = this.timelines.get(socket);
    if (timeline) this.lastRequestSent = { timeline, at };
  }

  private register(socket: net.Socket, timeline: ConnectionTimeline): void {
    this.timelines.set(socket, timeline);
    owners.set(socket, this);
  }

  async open(hostname: string, port: number, secure: boolean): Promise<net.Socket> {
    const timeline: ConnectionTimeline = { id: this.connections.length + 1, start: performance.now() };
    this.connections.push(timeline);
    const deadline = new ConnectDeadline(this.options.timeoutMs);
    try {
      const host = hostname.startsWith('[') ? hostname.slice(1, -1) : hostname;

      // The policy judges the final target, proxy or not: the tunnel goes to the address it allowed.
      const addresses = await resolveCheckedAll(this.options.policy, host);
      const address = addresses[0];
      const proxy = this.options.proxy;
      // A proxy the plan named is held to the policy too; the worker's own (its environment) is the operator's.
      const proxyAddress = proxy
        ? proxy.from === 'plan'
          ? await resolveChecked(this.options.policy, proxy.host)
          : await resolveUnchecked(proxy.host)
        : undefined;
      if (net.isIP(host) === 0 || (proxy && net.isIP(proxy.host) === 0)) timeline.resolved = performance.now();

      const socket = await this.step(
        proxy || addresses.length === 1
          ? net.connect({ host: proxyAddress ?? address, port: proxy?.port ?? port, noDelay: true })
          : racingConnect(host, port, addresses),
        'connect',
        deadline,
        proxy
          ? ` to the proxy ${proxy.shown} (${proxy.from === 'plan' ? "the target's proxy" : "from this worker's environment"})`
          : '',
      );
      timeline.connected = performance.now();
      // The address that answered first when both families raced.
      timeline.remoteAddress = `${proxy ? address : (socket.remoteAddress ?? address)}:${port}`;
      if (proxy) {
        await this.tunnel(
          socket,
          address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`,
          proxy,
          deadline,
        );
        timeline.tunneled = performance.now();
      }
      if (!secure) {
        this.tcp.set(timeline, { socket, readyBytes: 0 });
        this.register(socket, timeline);
        return socket;
      }

      const settings = this.options.tls;
      const tlsSocket = tls.connect({
        socket,
        // With `socket` given, `host` is what the certificate is checked against (else "localhost").
        host,
        servername: settings?.servername ?? (net.isIP(host) ? undefined : host),
        ALPNProtocols: this.options.alpn,
        rejectUnauthorized: !settings?.insecure,
        ca: settings?.caPem,
        // The client certificate, filled in from its references by worker/secrets.ts.
        ...(settings?.cert && settings.key
          ? { cert: settings.cert, key: settings.key, passphrase: settings.passphrase }
          : {}),
        session: this.options.resumeTlsSessions ? this.tlsSession : undefined,
        ...(this.options.tlsVersion
          ? { minVersion: this.options.tlsVersion, maxVersion: this.options.tlsVersion }
          : {}),
      });
      if (this.options.resumeTlsSessions) {
        // Sessions arrive after `secureConnect` (TLS 1.3: often two tickets; on Node, TLS 1.2 too); keep the newest.
        tlsSocket.on('session', (session: Buffer) => {
          this.tlsSession = session;
          timeline.sessionReceived ??= performance.now();
        });
      }
      await this.step(tlsSocket, 'tls', deadline);
      timeline.secured = performance.now();
      tlsSocket.once('error', (err: NodeJS.ErrnoException) => {
        timeline.tlsAlert = tlsAlertOf(err);
      });
      timeline.tls = {
        version: tlsSocket.getProtocol(),
        alpn: tlsSocket.alpnProtocol ?? false,
        cipher: tlsSocket.getCipher().name,
        resumed: tlsSocket.isSessionReused(),
      };
      this.tcp.set(timeline, { socket, readyBytes: socket.bytesRead });
      this.register(tlsSocket, timeline);
      return tlsSocket;
    } finally {
      deadline.clear();
    }
  }

  /** Opens the CONNECT tunnel, bounded by the deadline. */
  private async tunnel(socket: net.Socket, authority: string, proxy: ProxySettings, deadline: ConnectDeadline) {
    const expired = new Promise<never>((_resolve, reject) => {
      const onTimeout = () =>
        reject(
          new ProxyRefusedError(
            `proxy ${proxy.shown} did not answer CONNECT ${authority} within the connect time bound`,
          ),
        );
      if (deadline.expired) onTimeout();
      else deadline.onExpiry = onTimeout;
    });
    try {
      await Promise.race([openTunnel(socket, authority, proxy), expired]);
    } catch (err) {
      socket.destroy();
      throw new ConnectError((err as Error).message, 'PROXY_REFUSED', 'proxy', { cause: err });
    } finally {
      deadline.onExpiry = undefined;
    }
  }

  /**
   * What a TLS 1.2 handshake that ended on one of these alerts may mean: a server that requires a
   * client certificate ends it so when none is sent (OpenSSL-based servers: handshake_failure; Go:
   * bad_certificate), and one that does not accept the one sent says so the same way. TLS 1.3 has
   * an alert of its own (certificate_required: TLS_CLIENT_CERT_REQUIRED).
   */
  private clientCertificateHint(code: string | undefined): string {
    if (code !== 'ERR_SSL_SSLV3_ALERT_HANDSHAKE_FAILURE' && code !== 'ERR_SSL_SSLV3_ALERT_BAD_CERTIFICATE') return '';
    return this.options.tls?.cert
      ? ' (the server may not accept the client certificate given)'
      : ' (a server that requires a client certificate ends a TLS 1.2 handshake so when none is sent: give tls.cert and tls.key)';
  }

  /** Waits for `connect` (TCP) or `secureConnect` (TLS), bounded by the deadline. */
  private step<S extends net.Socket>(
    socket: S,
    phase: 'connect' | 'tls',
    deadline: ConnectDeadline,
    /** Where to, when it is not the target (" to the proxy ..."). */
    to = '',
  ): Promise<S> {
    const event = phase === 'tls' ? 'secureConnect' : 'connect';
    return new Promise((resolve, reject) => {
      const fail = (err: Error & { code?: string }) => {
        cleanup();
        socket.destroy();
        reject(
          new ConnectError(
            `${phase === 'tls' ? 'TLS handshake' : 'TCP connect'}${to}: ${readableMessage(err.message)}${phase === 'tls' ? this.clientCertificateHint(err.code) : ''}`,
            err.code ?? 'ECONNECT',
            phase,
            { cause: err },
          ),
        );
      };
      const onTimeout = () =>
        fail(Object.assign(new Error(`no answer within the connect time bound`), { code: 'ETIMEDOUT' }));
      const onReady = () => {
        cleanup();
        resolve(socket);
      };
      const cleanup = () => {
        socket.off(event, onReady);
        socket.off('error', fail);
        deadline.onExpiry = undefined;
      };
      if (deadline.expired) return onTimeout();
      socket.once(event, onReady);
      socket.once('error', fail);
      deadline.onExpiry = onTimeout;
    });
  }
}

/** A proxy of the worker's own environment: resolved, not judged (the operator named it). */
async function resolveUnchecked(host: string): Promise<string> {
  if (net.isIP(host)) return host;
  try {
    return (await lookup(host)).address;
  } catch (err) {
    throw new ConnectError(
      `resolving the proxy ${host}: ${(err as Error).message}`,
      (err as NodeJS.ErrnoException).code ?? 'EDNS',
      'resolve',
      {
        cause: err,
      },
    );
  }
}

/** The phases of a connection a request opened: resolve (when a name was looked up), TCP
 * connect, the proxy's CONNECT round trip when tunnelled, and the TLS handshake on https. */
export function connectionPhases(c: ConnectionTimeline): PhaseTimes {
  const phases: PhaseTimes = {};
  if (c.resolved !== undefined) phases.resolve = c.resolved - c.start;
  if (c.connected === undefined) return phases;
  phases.connect = c.connected - (c.resolved ?? c.start);
  if (c.tunneled !== undefined) phases.proxy = c.tunneled - c.connected;
  if (c.secured !== undefined) phases.tls = c.secured - (c.tunneled ?? c.connected);
  return phases;
}

/**
 * The address a connection to `host` goes to, as the target policy resolved and checked it:
 * every probe's connections get their address here. A refusal is thrown as is (TARGET_REFUSED_BY_POLICY);
 * a failed lookup as a ConnectError of the resolve phase.
 */
export async function resolveChecked(policy: AddressResolver, host: string): Promise<string> {
  return (await resolveCheckedAll(policy, host))[0];
}

/** resolveChecked, with every address when the connection races them (Happy Eyeballs: racingConnect). */
export async function resolveCheckedAll(policy: AddressResolver, host: string): Promise<string[]> {
  try {
    return policy.resolveAll ? await policy.resolveAll(host) : [await policy.resolve(host)];
  } catch (err) {
    if (err instanceof TargetRefusedError) throw err;
    throw new ConnectError(
      `resolving ${host}: ${(err as Error).message}`,
      (err as NodeJS.ErrnoException).code ?? 'EDNS',
      'resolve',
      { cause: err },
    );
  }
}

/**
 * A TCP connection to `host` that races its addresses, already resolved and checked, as Node
 * does (autoSelectFamily, RFC 8305 Happy Eyeballs: the families interleaved, the next attempt
 * after 250 ms without an answer): the lookup it asks for is answered with them, so nothing else is
 * looked up or connected to.
 */
export function racingConnect(host: string, port: number, addresses: string[]): net.Socket {
  const entries = addresses.map((address) => ({ address, family: net.isIP(address) }));
  const lookup = ((_host: string, options: { all?: boolean }, callback: (...args: unknown[]) => void) => {
    if (options.all) callback(null, entries);
    else callback(null, entries[0].address, entries[0].family);
  }) as unknown as net.LookupFunction;
  return net.connect({ host, port, noDelay: true, autoSelectFamily: true, lookup });
}

/** An error a TLS socket raised after its handshake, when it is a TLS alert (OpenSSL's code), with a readable message. */
export function tlsAlertOf(err: NodeJS.ErrnoException | undefined): Error | undefined {
  if (!err?.code?.startsWith('ERR_SSL_')) return undefined;
  return Object.assign(new Error(`TLS: ${readableMessage(err.message)}`), { code: err.code });
}

/**
 * OpenSSL's messages carry a queue dump ("80BC...:error:0A00042E:SSL routines:ssl3_read_bytes:tlsv1
 * alert protocol version:../deps/openssl/...:SSL alert number 70"); keep the reason and the alert.
 */
function readableMessage(message: string): string {
  const openssl = /^[0-9A-F]+:error:[0-9A-F]+:[^:]+:[^:]+:([^:]+):[^:]*:\d+:?(.*)$/s.exec(message.trim());
  if (!openssl) return message;
  const alert = openssl[2].trim();
  return alert ? `${openssl[1]} (${alert})` : openssl[1];
}
