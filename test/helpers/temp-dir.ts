// Temporary folders for tests, removed when the test file's process exits, passed or failed (each
// test file runs in a process of its own), so a suite run leaves nothing in the temp directory.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const made: string[] = [];

process.once('exit', () => {
  for (const dir of made) rmSync(dir, { recursive: true, force: true });
});

/** A fresh folder `<tmpdir>/<prefix>XXXXXX`, removed at exit (or earlier, by whoever made it). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
