// A logger whose lines a test can read: the same pino logger the code uses, into memory.
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../common/log.js';

export function captureLog(level = 'debug', name = 'test'): { log: Logger; text: () => string } {
  let text = '';
  const sink = new Writable({
    write: (chunk, _encoding, done) => {
      text += String(chunk);
      done();
    },
  });
  return { log: createLogger(name, level, sink), text: () => text };
}
