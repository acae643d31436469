// Compiles the NFQUEUE delay helper (nfq-delay.c) at setup time into a directory keyed by the
// source's hash, so one build serves every later run and a changed source builds anew.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { RegionsUnavailableError } from '../preflight.js';
import { CommandError, run } from '../system.js';

/** The C source lives next to this file in the repository (dist/ holds only the compiled TypeScript). */
export const NFQ_DELAY_SOURCE = fileURLToPath(new URL('../../../regions/delay/nfq-delay.c', import.meta.url));

export async function nfqDelayBinary(): Promise<string> {
  let source: Buffer;
  try {
    source = await readFile(NFQ_DELAY_SOURCE);
  } catch (err) {
    throw new Error(`the NFQUEUE delay helper's source is missing at ${NFQ_DELAY_SOURCE}: ${(err as Error).message}`);
  }
  const dir = path.join(
    tmpdir(),
    `probefleet-nfq-delay-${createHash('sha256').update(source).digest('hex').slice(0, 12)}`,
  );
  const binary = path.join(dir, 'nfq-delay');
  if (existsSync(binary)) return binary;

  await mkdir(dir, { recursive: true });
  // Parallel setups may compile at once: each writes its own file, the rename is atomic.
  const partial = `${binary}.${randomBytes(4).toString('hex')}`;
  try {
    await run('gcc', ['-O2', '-Wall', '-o', partial, NFQ_DELAY_SOURCE, '-lnetfilter_queue', '-lnfnetlink'], {
      timeoutMs: 60_000,
    });
  } catch (err) {
    await rm(partial, { force: true });
    const stderr = err instanceof CommandError ? err.stderr : (err as Error).message;
    throw new RegionsUnavailableError(
      `cannot compile the NFQUEUE delay helper (${NFQ_DELAY_SOURCE}); is libnetfilter-queue-dev installed ` +
        `(apt-get install gcc libnetfilter-queue-dev, or test/services/ensure.sh)?\n${stderr.trim()}`,
    );
  }
  await rename(partial, binary);
  return binary;
}
