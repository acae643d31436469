// One lab target per test file: started before the file's tests, closed after them.
import { after, before } from 'node:test';
import { createLogger } from '../../common/log.js';
import { startLab, type Lab } from '../../lab/index.js';

/** The file's lab. Its members are there once the file's `before` hooks have run. */
export function labForThisFile(): Lab {
  const lab = {} as Lab;
  before(async () => {
    Object.assign(lab, await startLab({ log: createLogger('test', 'silent') }));
  });
  after(async () => {
    await lab.close();
  });
  return lab;
}
