// The drain probe's HTTP clients, by name: what each does with a body the program closed before
// its end, which decides whether the connection carries the next request. The Go policies run on
// a raw connection (SequentialHttp1Client), where the probe reads exactly what the program asked
// for; `undici` is undici itself, with its own buffering. Each was checked against the client it
// names (test/integration/drain-go-client.test.ts; go-1.27 against the article's numbers, as Go
// 1.27 is not packaged: docs/probes.md).
import type { RequestSample } from '../../contracts/common.js';
import type { DrainClientName, DrainSample } from '../../contracts/probes/drain.js';
import {
  drainBody,
  undiciBodyChunks,
  type BodyChunks,
  type BodyRead,
  type Http1Body,
  type ResponseHead,
} from '../http/body.js';
import type { ConnectionTimeline } from '../http/connector.js';
import { SequentialHttp1Client } from '../http/http1-client.js';
import { TimedHttpClient, type TimedClientOptions } from '../http/timed-client.js';

export type BodyHandling = DrainSample['body'];

/** The program's side: reads (or not) and closes one body, and says what it did. */
export type BodyHandler = (body: BodyChunks, head: ResponseHead) => Promise<BodyRead & { handling: BodyHandling }>;

export interface DrainClient {
  /** Every connection it opened, counted at the socket layer. */
  readonly connections: readonly ConnectionTimeline[];
  /** One request whose body goes to `handle`; `handling` is absent when no body was handled. */
  exchange(
    seq: number,
    signal: AbortSignal,
    handle: BodyHandler,
  ): Promise<{ sample: RequestSample; handling?: BodyHandling }>;
  close(): Promise<void>;
}

export interface DrainCap {
  maxBytes: number;
  maxMs: number;
}

export function drainClient(name: DrainClientName, options: TimedClientOptions, cap: DrainCap): DrainClient {
  switch (name) {
    case 'undici':
      return undiciClient(options);
    case 'go-before-1.27':
      // Go 1.19's persistConn.readLoop: a body closed before io.EOF drops the connection, whatever
      // its size and even when the transport's bufio already holds all of it.
      return goClient(options, async () => undefined);
    case 'go-1.27':
      // The rest of the body is drained within the caps; reaching its end keeps the connection.
      // (The client's exchange never asks on Connection: close: the drain is skipped there.)
      return goClient(options, async (body, head) => {
        const drained = await drainBody(body.remainder(), head, cap, body.delivered);
        return {
          bytes: drained.bytes,
          complete: drained.complete,
          ...(drained.capHit ? { capHit: drained.capHit } : {}),
          drainMs: drained.drainMs,
        };
      });
  }
}

function undiciClient(options: TimedClientOptions): DrainClient {
  const client = new TimedHttpClient(options);
  return {
    get connections() {
      return client.connections;
    },
    async exchange(seq, signal, handle) {
      const { sample, body } = await client.exchange({
        seq,
        signal,
        consumeBody: (undiciBody, head) => handle(undiciBodyChunks(undiciBody), head),
      });
      return { sample, handling: body?.handling };
    },
    close: () => client.close(),
  };
}

type ClientDrain = NonNullable<BodyHandling['clientDrain']>;

function goClient(
  options: TimedClientOptions,
  /** What the client does with a body closed before its end; its drain, if it ran one. */
  onEarlyClose: (body: Http1Body, head: ResponseHead) => Promise<ClientDrain | undefined>,
): DrainClient {
  const client = new SequentialHttp1Client(options);
  return {
    get connections() {
      return client.connections;
    },
    async exchange(seq, signal, handle) {
      let clientDrain: ClientDrain | undefined;
      const { sample, body } = await client.exchange({
        seq,
        signal,
        consumeBody: handle,
        onEarlyClose: async (http1Body, head) => {
          clientDrain = await onEarlyClose(http1Body, head);
        },
      });
      return { sample, handling: body && (clientDrain ? { ...body.handling, clientDrain } : body.handling) };
    },
    close: async () => client.close(),
  };
}
