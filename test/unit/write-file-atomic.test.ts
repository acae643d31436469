// Report files (--json, --csv, --markdown, --html) and bench results are written atomically; a
// destination that is not a regular file stays what it is (`--csv /dev/null` as root had
// replaced /dev/null with a regular file).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { lstat, mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { createReadStream } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { removeUnfinishedWrites, writeFileAtomic } from '../../common/write-file-atomic.js';
import { tempDir } from '../helpers/temp-dir.js';

let dir: string;
before(async () => {
  dir = tempDir('probefleet-write-');
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('a new file holds the data, and no temporary file is left', async () => {
  const file = path.join(dir, 'new.json');
  await writeFileAtomic(file, '{"a":1}');
  assert.equal(await readFile(file, 'utf8'), '{"a":1}');
  assert.deepEqual(await readdir(dir), ['new.json']);
  await rm(file);
});

test('a FIFO stays a FIFO, and its reader gets the data', { timeout: 10_000 }, async () => {
  const fifo = path.join(dir, 'pipe');
  execFileSync('mkfifo', [fifo]);
  const chunks: Buffer[] = [];
  const read = new Promise<string>((resolve, reject) => {
    createReadStream(fifo)
      .on('data', (chunk) => chunks.push(chunk as Buffer))
      .on('end', () => resolve(Buffer.concat(chunks).toString()))
      .on('error', reject);
  });
  await writeFileAtomic(fifo, 'through the pipe');
  assert.equal(await read, 'through the pipe');
  assert.ok((await lstat(fifo)).isFIFO(), 'still a FIFO');
  await rm(fifo);
});

test('a symbolic link stays a link, and the file it names is replaced', async () => {
  const real = path.join(dir, 'real.csv');
  const link = path.join(dir, 'link.csv');
  await writeFile(real, 'old');
  await symlink(real, link);
  await writeFileAtomic(link, 'new');
  assert.ok((await lstat(link)).isSymbolicLink(), 'still a link');
  assert.equal(await readFile(real, 'utf8'), 'new');
});

test('a full disk: the error names the file, and neither it nor a temporary file is left', async (t) => {
  // Skipped outside CI without root: mounting the tmpfs that stands for a full disk needs root.
  if (process.getuid?.() !== 0) {
    if (process.env.CI) assert.fail('CI runs as root: a small tmpfs is the full disk here');
    t.skip('needs root to mount a small tmpfs (run as root, as CI does)');
    return;
  }
  const full = path.join(dir, 'full');
  await mkdir(full);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16k', 'tmpfs', full]);
  try {
    const file = path.join(full, 'run.html');
    await assert.rejects(writeFileAtomic(file, 'x'.repeat(1 << 20)), {
      code: 'ENOSPC',
      message: new RegExp(`^cannot write ${file}: ENOSPC`),
    });
    assert.deepEqual(await readdir(full), []);
  } finally {
    execFileSync('umount', [full]);
  }
});

test('a write still under way when the process must quit at once: its temporary file is removed', async () => {
  const own = path.join(dir, 'quitting');
  await mkdir(own);
  const file = path.join(own, 'unfinished.json');
  let release!: () => void;
  const more = new Promise<void>((resolve) => {
    release = resolve;
  });
  async function* pieces() {
    yield '{"results":[';
    await more; // the rest of the run has not come yet
    yield ']}';
  }
  const writing = writeFileAtomic(file, pieces());
  const tmp = `${file}.${process.pid}.tmp`;
  for (let i = 0; i < 1000 && !(await lstat(tmp).catch(() => undefined)); i++)
    await new Promise((r) => setTimeout(r, 10));
  assert.ok(await lstat(tmp), 'the temporary file is being written');
  removeUnfinishedWrites();
  assert.deepEqual(await readdir(own), [], 'neither the temporary file nor the file');
  release();
  await writing.catch(() => {}); // its rename has nothing to rename now
  assert.equal(await lstat(file).catch(() => undefined), undefined, 'no half a report');
});
