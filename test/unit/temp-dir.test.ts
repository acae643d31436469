// A test's temporary folders are gone when its process ends, whether it passed or failed, so a
// suite run leaves nothing in the temp directory (test/helpers/temp-dir.ts).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { test } from 'node:test';

const helper = new URL('../helpers/temp-dir.js', import.meta.url).href;

for (const [how, ending] of [
  ['ends normally', ''],
  ['fails (exit 1)', 'process.exitCode = 1;'],
  ['throws', "throw new Error('a failing test');"],
] as const) {
  test(`a process that ${how} leaves no folder of tempDir behind`, () => {
    const script = `import { tempDir } from ${JSON.stringify(helper)};
import { writeFileSync } from 'node:fs';
const dir = tempDir('probefleet-temp-dir-test-');
writeFileSync(dir + '/file', 'x');
console.log(dir);
${ending}`;
    const ran = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    const dir = ran.stdout.trim();
    assert.match(dir, /probefleet-temp-dir-test-/, ran.stderr);
    assert.equal(existsSync(dir), false, `${dir} left behind`);
  });
}
