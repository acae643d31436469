import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { planJsonSchema } from '../../contracts/plan-json-schema.js';
import { REPO_ROOT } from '../helpers/repo.js';

test('the committed plan JSON Schema matches the zod schema (regenerate: npm run schema)', async () => {
  const committed = JSON.parse(await readFile(path.join(REPO_ROOT, 'contracts/plan.schema.json'), 'utf8'));
  assert.deepEqual(committed, planJsonSchema());
});
