// What the lab's routes share: reading integer query parameters, short text answers, and
// servers that answer by hand.
import type { ServerResponse } from 'node:http';
import net from 'node:net';

/** A plain-text answer with its length, e.g. a 400 naming the query parameter that was wrong. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
}

/** An integer query parameter within [min, max], the fallback when absent, or a message saying what is wrong. */
export function intParam(
  query: URLSearchParams,
  name: string,
  fallback: number,
  min: number,
  max: number,
): number | string {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  return Number.isInteger(value) && value >= min && value <= max
    ? value
    : `${name} must be an integer ${min}..${max}, got "${raw}"`;
}

/**
 * A TCP server that answers each connection's first bytes by hand, for the answers no HTTP or
 * TLS server library gives (a reset in the middle of a head, a broken status line). Clients
 * that give up are no error of the lab's.
 */
export function handWrittenServer(answer: (socket: net.Socket) => void): net.Server {
  return net.createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => answer(socket));
  });
}
