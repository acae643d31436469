import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { importCycles, layerViolations, readImportGraph, type ImportGraph } from '../helpers/import-graph.js';
import { REPO_ROOT } from '../helpers/repo.js';

// The layers of docs/architecture.md ("Layers") and no import cycles, checked on the sources.

/** Cycles known and being removed. Each entry must still be a cycle: when it is gone the test says
 * so, and the entry goes, so the cycle cannot come back unnoticed. */
const ALLOWED_CYCLES: string[][] = [];

const graph = readImportGraph(REPO_ROOT);
const key = (files: string[]) => [...files].sort().join(' <-> ');

function withImport(from: string, to: string): ImportGraph {
  const copy: ImportGraph = new Map([...graph].map(([file, targets]) => [file, new Set(targets)]));
  copy.get(from)!.add(to);
  return copy;
}

describe('import graph', () => {
  test('reads every layer, including type-only and dynamic imports', () => {
    assert.ok(graph.size > 300, `only ${graph.size} files read`);
    assert.ok(graph.get('worker/http/timed-client.ts')?.has('worker/target-policy.ts'), 'import type');
    assert.ok(graph.get('cli/commands/index.ts')?.has('cli/commands/run.ts'), "import('…')");
    assert.ok(graph.get('metrics/job-metrics.ts')?.has('contracts/metric-names.ts'));
  });

  test('no file imports from a higher layer or a sibling folder of its layer', () => {
    assert.deepEqual(layerViolations(graph), []);
  });

  test('no import cycles but the allowed ones', () => {
    const found = importCycles(graph).map(key);
    const allowed = ALLOWED_CYCLES.map(key);
    assert.deepEqual(
      found.filter((c) => !allowed.includes(c)),
      [],
      'import cycles (each line is one set of files that import each other)',
    );
    for (const cycle of allowed)
      assert.ok(found.includes(cycle), `${cycle} is no longer a cycle: remove it from ALLOWED_CYCLES`);
  });

  test('an upward or sideways import is caught', () => {
    assert.deepEqual(layerViolations(withImport('contracts/job.ts', 'common/log.ts')), [
      'contracts/job.ts -> common/log.ts',
    ]);
    assert.deepEqual(layerViolations(withImport('worker/execute-job.ts', 'cli/exit-codes.ts')), [
      'worker/execute-job.ts -> cli/exit-codes.ts',
    ]);
    assert.deepEqual(layerViolations(withImport('lab/index.ts', 'metrics/prom.ts')), [
      'lab/index.ts -> metrics/prom.ts',
    ]);
    assert.deepEqual(layerViolations(withImport('test/unit/stats.test.ts', 'cli/exit-codes.ts')), []);
  });

  test('a new cycle is caught, through any number of files', () => {
    const cycles = importCycles(withImport('contracts/common.ts', 'contracts/job.ts')).map(key);
    assert.ok(
      cycles.some((c) => c.includes('contracts/common.ts') && c.includes('contracts/job.ts')),
      cycles.join('\n'),
    );
    assert.ok(importCycles(withImport('common/stats.ts', 'common/stats.ts')).map(key).includes('common/stats.ts'));
  });
});
