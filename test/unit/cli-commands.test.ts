// The command table (cli/commands/index.ts): `--help` lists the commands from it without loading
// their modules, so each entry must say what its module says, or the list would drift from the
// commands' own help.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { COMMANDS } from '../../cli/commands/index.js';

describe('the command table', () => {
  for (const [name, entry] of Object.entries(COMMANDS)) {
    test(`${name}: its command and description are its module's`, async () => {
      const module = await entry.load();
      assert.equal(module.command, entry.command);
      assert.equal(module.describe, entry.describe);
      assert.equal(entry.command.split(' ')[0], name);
      // The list would show these too; the table has no place for them.
      assert.equal(module.aliases, undefined);
      assert.equal(module.deprecated, undefined);
    });
  }
});
