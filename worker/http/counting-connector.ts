// undici's own connector, counting the connections it opens and the protocol each negotiated.
// The load probe uses it instead of TimedConnector: under load, when every request may open a
// connection, per-connection timelines would grow with the run and time nothing it reports.
import type { Socket } from 'node:net';
import { buildConnector } from 'undici';
import type { JobTls } from '../../contracts/job.js';
import type { TargetPolicy } from '../target-policy.js';
import { resolveChecked } from './connector.js';
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
  policy: TargetPolicy;
  /** Connect through this proxy's CONNECT tunnel. */
  proxy?: ProxySettings;
}

/** The server would not speak HTTP/2; classified as HTTP2_ERROR. */
export class H2NotNegotiatedError extends Error {
  override name = 'H2NotNegotiatedError';
  readonly code = 'ERR_HTTP2_NOT_NEGOTIATED';
}

export class CountingConnector {
  /** Connections established (TCP connected, TLS handshake done). */
  opened = 0;
  /** Established connections per application protocol ("http/1.1", "h2"). */
  readonly protocols: Record<string, number> = {};
  private readonly base: buildConnector.connector;

  constructor(private readonly options: CountingConnectorOptions) {
    this.base = buildConnector({
      rejectUnauthorized: !options.tls?.insecure,
      ca: options.tls?.caPem,
      servername: options.tls?.servername,
      // The client certificate, filled in from its references by worker/secrets.ts.
      ...(options.tls?.cert && options.tls.key
        ? { cert: options.tls.cert, key: options.tls.key, passphrase: options.tls.passphrase }
        : {}),
      // Offers h2 and http/1.1; which one the server chose is checked below.
      allowH2: options.h2,
      maxCachedSessions: options.resumeTlsSessions ? 100 : 0,
      timeout: options.timeoutMs,
    });
  }

  /** The function undici's Client/Pool take as `connect`. */
  readonly connect: buildConnector.connector = (opts, callback) => {
    // undici's connector connects to `hostname`: give it the checked address. The certificate is
    // still checked against, and SNI still names, the URL's host (undici derives both from `host`).
    resolveChecked(this.options.policy, opts.hostname).then(
      (address) =>
        this.options.proxy
          ? this.openTunnelled(opts, address, callback)
          : this.open({ ...opts, hostname: address }, callback),
      (err: Error) => callback(err, null),
    );
  };

  /** Through the proxy: a tunnel to the checked address, TLS (undici's, `httpSocket`) over it on https. */
  private openTunnelled(opts: buildConnector.Options, address: string, callback: buildConnector.Callback): void {
    const proxy = this.options.proxy!;
    const port = Number(opts.port) || (opts.protocol === 'https:' ? 443 : 80);
    const authority = address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
    const proxyAddress =
      proxy.from === 'plan' ? resolveChecked(this.options.policy, proxy.host) : Promise.resolve(proxy.host);
    proxyAddress
      .then((at) => tunnelThrough(proxy, at, authority, this.options.timeoutMs))
      .then(
        (socket) =>
          opts.protocol === 'https:'
            ? this.open({ ...opts, httpSocket: socket } as buildConnector.Options, callback)
            : this.counted(opts, socket, callback),
        (err: Error) => callback(err, null),
      );
  }

  private open(opts: buildConnector.Options, callback: buildConnector.Callback): void {
    this.base(opts, (err, socket) => (err ? callback(err, null) : this.counted(opts, socket!, callback)));
  }

  /** Counts an established connection and its protocol, refusing one that would not speak HTTP/2 when asked. */
  private counted(opts: buildConnector.Options, socket: Socket, callback: buildConnector.Callback): void {
    const s = socket as Socket & { alpnProtocol?: string | false | null };
    if (opts.protocol !== 'https:') {
      // Prior knowledge: undici picks its HTTP/2 client by the socket's ALPN result.
      if (this.options.h2) s.alpnProtocol = 'h2';
    } else if (this.options.h2 && s.alpnProtocol !== 'h2') {
      s.destroy();
      return callback(
        new H2NotNegotiatedError(`the server did not negotiate HTTP/2 (ALPN: ${s.alpnProtocol || 'none'})`),
        null,
      );
    }
    const protocol = s.alpnProtocol || 'http/1.1';
    this.opened++;
    this.protocols[protocol] = (this.protocols[protocol] ?? 0) + 1;
    callback(null, s);
  }
}
