import { rmSync } from 'node:fs';
import { realpath, rename, rm, stat, writeFile } from 'node:fs/promises';

/** Temporary files being written now (removeUnfinishedWrites). */
const unfinished = new Set<string>();

/**
 * Writes through a temporary file and a rename, so a reader never sees half a file. A destination
 * that exists and is not a regular file (/dev/null, /dev/stdout, a FIFO) is written in place: a
 * rename would replace the device with a file (as root, /dev/null itself). A symbolic link is
 * followed, so the file it names is replaced, not the link. A write that fails (a full disk)
 * leaves no temporary file behind, and its error names the file that was not written.
 */
/** `data` whole, or in pieces as they come (a big run's JSON, a page of results at a time). */
export async function writeFileAtomic(file: string, data: string | AsyncIterable<string>): Promise<void> {
  const target = await realpath(file).catch(() => file);
  const existing = await stat(target).catch(() => undefined);
  try {
    if (existing && !existing.isFile()) {
      await writeFile(target, data);
      return;
    }
    const tmp = `${target}.${process.pid}.tmp`;
    unfinished.add(tmp);
    try {
      await writeFile(tmp, data);
      await rename(tmp, target);
    } catch (err) {
      await rm(tmp, { force: true });
      throw err;
    } finally {
      unfinished.delete(tmp);
    }
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    throw Object.assign(new Error(`cannot write ${file}: ${message}`, { cause: err }), { code });
  }
}

/** Removes the temporary files of writes still under way, for a process about to quit at once (a
 * second Ctrl-C): what it had written of a report is not left beside the file it was for. */
export function removeUnfinishedWrites(): void {
  for (const tmp of unfinished) rmSync(tmp, { force: true });
  unfinished.clear();
}
