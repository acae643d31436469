// The load probe's connector: opens each connection to the address the target policy gave (a TCP
// connection, TLS over it on https), counting the connections and the protocol each negotiated.
// The load probe uses it instead of TimedConnector: under load, when every request may open a
// connection, per-connection timelines would grow with the run and time nothing it reports. It
// speaks undici's connector interface, for the HTTP/1.1 Clients, and gives node:http2 its
// sockets; it does not load undici itself, so an HTTP/2 load runs in a thread without it
// (bench/README.md, HTTP/2 load: a process that has loaded undici runs node:http2 ~10% slower).
import net, { type Socket } from 'node:net';
import tls from 'node:tls';
import type { buildConnector } from 'undici';
import type { JobTls } from '../../contracts/job.js';
import type { AddressResolver } from '../target-policy.js';
import { racingConnect, resolveChecked, resolveCheckedAll } from './connector.js';
import { tunnelThrough, type ProxySettings } from './proxy.js';

export interface CountingConnectorOptions {
  tls?: JobTls;
  /** Speak HTTP/2: ALPN h2 on https, prior knowledge (h2c) on http. */
  h2: boolean;
  /** Offer the previous TLS session on new connections. */
  resumeTlsSessions: boolean;
  /** Bound on connect + handshake. */
  timeoutMs: number;
  /** Decides on, and gives, the address each connection goes to. */
  policy: AddressResolver;
  /** Connect through this proxy's CONNECT tunnel. */
  proxy?: ProxySettings;
}

/** The server would not speak HTTP/2; classified as HTTP2_ERROR. */
export class H2NotNegotiatedError extends Error {
  override name = 'H2NotNegotiatedError';
  readonly code = 'ERR_HTTP2_NOT_NEGOTIATED';
}

/** What undici's Client gives its connector: `hostname` the URL's host name (no brackets), `host` with its port. */
type ConnectOptions = Pick<buildConnector.Options, 'hostname' | 'host' | 'protocol' | 'port'>;
type ConnectCallback = buildConnector.Callback;

export class CountingConnector {
  /** Connections established (TCP connected, TLS handshake done). */
  opened = 0;
  /** Established connections per application protocol ("http/1.1", "h2"). */
  readonly protocols: Record<string, number> = {};
  /** The newest TLS session a server gave, offered on the next connection (`resumeTlsSessions`). */
  private tlsSession: Buffer | undefined;

  constructor(private readonly options: CountingConnectorOptions) {}

  /** The function undici's Client takes as `connect`; the H2 channel calls it the same way. */
  readonly connect: buildConnector.connector = (opts: ConnectOptions, callback: ConnectCallback): void => {
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const open = (socket: Socket) => this.secured(opts, socket, callback);
    // The socket goes to the checked address; the certificate is checked against, and SNI
    // names, the URL's host.
    resolveCheckedAll(this.options.policy, opts.hostname)
      .then((addresses) => {
        if (this.options.proxy) return this.tunnel(addresses[0], port);
        return this.bounded(
          addresses.length > 1
            ? racingConnect(opts.hostname, port, addresses)
            : net.connect({ host: addresses[0], port, noDelay: true }),
          'connect',
        );
      })
      .then(open, (err: Error) => callback(err, null));
  };

  /** Through the proxy: a tunnel to the checked address. */
  private async tunnel(address: string, port: number): Promise<Socket> {
    const proxy = this.options.proxy!;
    const authority = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
    const at = proxy.from === 'plan' ? await resolveChecked(this.options.policy, proxy.host) : proxy.host;
    return tunnelThrough(proxy, at, authority, this.options.timeoutMs);
  }

  /** TLS over `socket` on https (ALPN as asked), then counted; refuses a server that would not speak HTTP/2 when asked. */
  private secured(opts: ConnectOptions, socket: Socket, callback: ConnectCallback): void {
    if (opts.protocol !== 'https:') {
      // Prior knowledge: undici picks its HTTP/2 client by the socket's ALPN result.
      if (this.options.h2) (socket as Socket & { alpnProtocol?: string }).alpnProtocol = 'h2';
      return this.counted(socket, this.options.h2 ? 'h2' : 'http/1.1', callback);
    }
    const settings = this.options.tls;
    let tlsSocket: tls.TLSSocket;
    try {
      tlsSocket = tls.connect({
        socket,
        // With `socket` given, `host` is what the certificate is checked against.
        host: opts.hostname,
        servername: settings?.servername ?? (net.isIP(opts.hostname) ? undefined : opts.hostname),
        ALPNProtocols: this.options.h2 ? ['h2', 'http/1.1'] : ['http/1.1'],
        rejectUnauthorized: !settings?.insecure,
        ca: settings?.caPem,
        // The client certificate, filled in from its references by worker/secrets.ts.
        ...(settings?.cert && settings.key
          ? { cert: settings.cert, key: settings.key, passphrase: settings.passphrase }
          : {}),
        session: this.options.resumeTlsSessions ? this.tlsSession : undefined,
      });
    } catch (err) {
      // A key or certificate OpenSSL cannot read is thrown here, at once, not emitted.
      socket.destroy();
      return callback(err as Error, null);
    }
    if (this.options.resumeTlsSessions) tlsSocket.on('session', (session: Buffer) => (this.tlsSession = session));
    this.bounded(tlsSocket, 'secureConnect').then(
      () => {
        if (this.options.h2 && tlsSocket.alpnProtocol !== 'h2') {
          tlsSocket.destroy();
          return callback(
            new H2NotNegotiatedError(`the server did not negotiate HTTP/2 (ALPN: ${tlsSocket.alpnProtocol || 'none'})`),
            null,
          );
        }
        this.counted(tlsSocket, tlsSocket.alpnProtocol || 'http/1.1', callback);
      },
      (err: Error) => callback(err, null),
    );
  }

  private counted(socket: Socket, protocol: string, callback: ConnectCallback): void {
    this.opened++;
    this.protocols[protocol] = (this.protocols[protocol] ?? 0) + 1;
    callback(null, socket);
  }

  /** Resolves when `socket` emits `ready` within the connect bound; else destroys it. */
  private bounded<S extends Socket>(socket: S, ready: 'connect' | 'secureConnect'): Promise<S> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          socket.destroy(
            Object.assign(new Error(`no answer within the connect time bound (${this.options.timeoutMs} ms)`), {
              code: 'ETIMEDOUT',
            }),
          ),
        this.options.timeoutMs,
      );
      const onError = (err: Error) => {
        clearTimeout(timer);
        reject(err);
      };
      socket.once('error', onError);
      socket.once(ready, () => {
        clearTimeout(timer);
        socket.off('error', onError);
        resolve(socket);
      });
    });
  }
}
