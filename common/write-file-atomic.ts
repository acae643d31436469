import { rename, writeFile } from 'node:fs/promises';

/** Writes through a temporary file and a rename, so a reader never sees half a file. */
export async function writeFileAtomic(file: string, data: string): Promise<void> {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, data);
  await rename(tmp, file);
}
