// What the lab's routes share: reading integer query parameters, and short text answers.
import type { ServerResponse } from 'node:http';

/** A plain-text answer with its length, e.g. a 400 naming the query parameter that was wrong. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  const body = Buffer.from(`${text}\n`);
  res.writeHead(status, { 'content-type': 'text/plain', 'content-length': body.length });
  res.end(body);
}

/** An integer query parameter within [min, max], the fallback when absent, or a message saying what is wrong. */
export function intParam(query: URLSearchParams, name: string, fallback: number, min: number, max: number): number | string {
  const raw = query.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  return Number.isInteger(value) && value >= min && value <= max ? value : `${name} must be an integer ${min}..${max}, got "${raw}"`;
}
