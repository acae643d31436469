// Reads a file a user named (a plan, a CA file) without trusting what it is: a FIFO or a device
// would block or never end, and a huge file would fill the memory before anything could refuse
// it. The file is opened without blocking (opening a FIFO for reading otherwise waits for a
// writer), must be a regular file, and is read only up to its limit.
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { thousands } from './plural.js';

export class FileRefusedError extends Error {
  override name = 'FileRefusedError';
}

function kindOf(stats: Stats): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isSocket()) return 'a socket';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  return 'not a regular file';
}

/**
 * The file's bytes. Throws FileRefusedError when it is not a regular file or holds more than
 * `maxBytes` (also when it grows past them while being read), and the system's error (ENOENT,
 * EACCES...) when it cannot be opened.
 */
export async function readBoundedFile(file: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw new FileRefusedError(`${kindOf(stats)}, not a regular file`);
    const limit = `the limit of ${thousands(maxBytes)} bytes`;
    if (stats.size > maxBytes) throw new FileRefusedError(`${thousands(stats.size)} bytes, over ${limit}`);
    // One byte more than allowed tells a file that grew since stat() from one that did not.
    const buffer = Buffer.alloc(maxBytes + 1);
    let length = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
      if (length > maxBytes) throw new FileRefusedError(`grew past ${limit} while being read`);
    }
    return buffer.subarray(0, length);
  } finally {
    await handle.close();
  }
}

/**
 * The file as UTF-8 text, or why it cannot be read, in words ("not UTF-8 text", ENOENT, "a FIFO
 * (named pipe), not a regular file"): what a message about a file a user named says. `keepBom`
 * keeps a leading byte-order mark in the text (a YAML parser reports it where it is).
 */
export async function readUserTextFile(
  file: string,
  maxBytes: number,
  { keepBom = false } = {},
): Promise<{ text: string } | { reason: string }> {
  try {
    const bytes = await readBoundedFile(file, maxBytes);
    return { text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: keepBom }).decode(bytes) };
  } catch (err) {
    if (err instanceof FileRefusedError) return { reason: err.message };
    if (err instanceof TypeError) return { reason: 'not UTF-8 text' };
    return { reason: (err as NodeJS.ErrnoException).code ?? (err as Error).message };
  }
}
