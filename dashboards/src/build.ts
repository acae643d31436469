// `npm run dashboards`: writes every generated file under dashboards/ (see files.ts).
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { generatedFiles } from './files.js';

/** dist/dashboards/src/ → the repository root. */
const root = fileURLToPath(new URL('../../../', import.meta.url));

for (const [file, content] of generatedFiles()) {
  const target = path.join(root, file);
  await mkdir(path.dirname(target), { recursive: true });
  await writeFile(target, content);
  process.stdout.write(`wrote ${file}\n`);
}
